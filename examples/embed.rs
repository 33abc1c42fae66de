//! A Rust host embedding Kiln: it registers a function, hands the script its training
//! data as tensors built from Rust vectors (no copy), runs a small training loop under
//! safety limits in a sandbox, and reads the learned weights back into Rust.
//!
//! Run: `cargo run --example embed`

use kiln::{Buffer, Engine, Limits, Tensor};
use std::time::Duration;

/// The script: linear regression by gradient descent, reporting through the host.
const TRAIN: &str = r#"
w = zeros(3, 1, requires_grad=True)
b = zeros(1, requires_grad=True)
for step in range(steps):
    loss = ((x @ w + b - y) ** 2).mean()
    loss.backward()
    with no_grad():
        w -= lr * w.grad
        b -= lr * b.grad
    w.grad = None
    b.grad = None
    if step % 100 == 0:
        report(step, loss.item())
final_loss = loss.item()
"#;

const TRUE_W: [f32; 3] = [2.0, -1.0, 0.5];
const TRUE_B: f32 = 0.3;

/// Inputs on a fixed grid and exact targets `y = x @ TRUE_W + TRUE_B`.
fn data(n: usize) -> (Vec<f32>, Vec<f32>) {
    let mut x = Vec::with_capacity(n * 3);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let row = [
            (i % 7) as f32 / 3.0 - 1.0,
            (i % 5) as f32 / 2.0 - 1.0,
            (i % 3) as f32 - 1.0,
        ];
        y.push(row.iter().zip(TRUE_W).map(|(a, w)| a * w).sum::<f32>() + TRUE_B);
        x.extend(row);
    }
    (x, y)
}

fn run() -> Result<(), String> {
    let n = 105;
    let (xs, ys) = data(n);
    // `from_buffer` takes the Vec as the tensor's storage: no copy.
    let x = Tensor::from_buffer(Buffer::F32(xs), &[n, 3]).map_err(|e| e.to_string())?;
    let y = Tensor::from_buffer(Buffer::F32(ys), &[n, 1]).map_err(|e| e.to_string())?;

    let mut engine = Engine::with_limits(Limits {
        max_operations: Some(1_000_000),
        max_call_depth: 100,
        max_tensor_bytes: Some(64 << 20),
        max_total_tensor_bytes: Some(256 << 20),
        max_memory: Some(512 << 20),
        wall_time: Some(Duration::from_secs(30)),
        max_container_len: 1 << 20,
    });
    engine.set_sandbox(true);
    engine.register_fn("report", |step: i64, loss: f64| {
        println!("step {step:4}: loss {loss:.6}");
    });
    engine.set("x", x);
    engine.set("y", y);
    engine.set("lr", 0.2);
    engine.set("steps", 600i64);
    if let Err(e) = engine.eval(TRAIN) {
        return Err(engine.render_error(&e));
    }

    let w: Tensor = engine.get("w").map_err(|e| e.to_string())?;
    let b: Tensor = engine.get("b").map_err(|e| e.to_string())?;
    let loss: f64 = engine.get("final_loss").map_err(|e| e.to_string())?;
    let w = w.to_vec::<f32>().map_err(|e| e.to_string())?;
    let b = b.to_vec::<f32>().map_err(|e| e.to_string())?;
    println!("learned w = {w:?}, b = {b:?} (final loss {loss:.2e})");
    let close = w.iter().zip(TRUE_W).all(|(a, t)| (a - t).abs() < 1e-2)
        && b.first().is_some_and(|b| (b - TRUE_B).abs() < 1e-2);
    if close {
        println!("weights match the generating model");
        Ok(())
    } else {
        Err(format!("weights did not converge: {w:?} {b:?}"))
    }
}

fn main() {
    if let Err(msg) = run() {
        eprintln!("{msg}");
        std::process::exit(1);
    }
}
