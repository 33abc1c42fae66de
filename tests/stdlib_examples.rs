//! Runs the training examples of examples/ (each asserts its own quality bar, e.g.
//! > 95% accuracy on two moons) and checks what they print.

use kiln::Engine;
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

fn run_example(name: &str) -> String {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name);
    let mut e = Engine::new();
    let out = Rc::new(RefCell::new(String::new()));
    let sink = out.clone();
    e.set_output(Box::new(move |s| sink.borrow_mut().push_str(s)));
    if let Err(err) = e.run_file(&path) {
        panic!("{name} failed:\n{}\n{}", out.borrow(), e.render_error(&err));
    }
    let s = out.borrow().clone();
    s
}

/// The last line starting with `prefix`, parsed as the number after it.
fn number_after(out: &str, prefix: &str) -> f64 {
    let line = out
        .lines()
        .rev()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting with {prefix:?} in:\n{out}"));
    line[prefix.len()..]
        .split_whitespace()
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no number in {line:?}"))
}

// One test: the checkpoint example writes files into the current directory, which is
// set to a scratch directory here (a single test per binary, so no race).
#[test]
fn examples_train_and_report() {
    let dir = std::env::temp_dir().join(format!("kiln_examples_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::env::set_current_dir(&dir).unwrap();

    let out = run_example("dynamic_model.dl");
    // 320 rows in batches of 48: six full batches and one of 32, each shape printed once.
    assert!(
        out.starts_with(
            "forward: input shape torch.Size([48, 4])\nforward: input shape torch.Size([32, 4])\n"
        ),
        "{out}"
    );
    assert_eq!(out.matches("forward: input shape").count(), 2, "{out}");
    assert!(number_after(&out, "deep branch taken in") > 0.0, "{out}");
    assert!(number_after(&out, "final mse") < 0.05, "{out}");

    let out = run_example("two_moons.dl");
    assert!(number_after(&out, "test accuracy") > 0.95, "{out}");

    let out = run_example("gru_sequences.dl");
    assert!(out.starts_with("bucket sizes: ["), "{out}");
    assert!(number_after(&out, "accuracy") > 0.9, "{out}");

    // BatchNorm's running statistics: 6 epochs of 256 / 32 batches, then eval mode.
    let out = run_example("cnn_batchnorm.dl");
    assert!(
        out.contains("running stats (8,) batches tracked 48"),
        "{out}"
    );
    assert!(number_after(&out, "eval accuracy") > 0.9, "{out}");
    assert!(out.contains("(1): BatchNorm2d(8, eps=1e-05"), "{out}");
    // The sequence examples are PyTorch scripts trained from a shuffled DataLoader (a
    // seeded generator); tests/refs/seq_examples_ref.py runs the same files under torch,
    // which prints these losses: the first mini-batch's (the same shuffle order and
    // initial weights) and the whole set's after training (float rounding drifts apart
    // slowly under Adam: ~5e-5 after the LM's 20 steps).
    let out = run_example("lstm_classifier.dl");
    assert!(
        out.starts_with("parameter dtype torch.float32\nsteps 18\n"),
        "{out}"
    );
    let (first, fin) = (
        number_after(&out, "first loss"),
        number_after(&out, "final loss"),
    );
    assert!((first - 1.077484).abs() < 1e-4, "{out}");
    assert!((fin - 0.774063).abs() < 5e-4, "{out}");

    let out = run_example("tiny_transformer_lm.dl");
    assert!(out.starts_with("windows 24 vocab 28 steps 20\n"), "{out}");
    let (first, fin) = (
        number_after(&out, "first loss"),
        number_after(&out, "final loss"),
    );
    assert!((first - 3.314131).abs() < 1e-4, "{out}");
    assert!((fin - 2.842847).abs() < 1e-3, "{out}");

    let out = run_example("checkpoint.dl");
    assert!(
        out.contains(
            "saved tensors: ['0.bias (8,)', '0.weight (8, 3)', '2.bias (1,)', '2.weight (1, 8)']"
        ),
        "{out}"
    );
    assert!(out.contains("restored model matches: True"), "{out}");
    assert!(
        out.contains("npy round trip: torch.Size([64, 3]) torch.float32 True"),
        "{out}"
    );
    assert!(dir.join("checkpoint.safetensors").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}
