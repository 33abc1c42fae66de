//! Builds and runs `examples/embed.rs`: a host that registers a function, trains on
//! host-provided tensors in a sandboxed, limited engine and reads the weights back.

use std::process::Command;

#[test]
fn embed_example_trains_and_reads_weights_back() {
    let out = Command::new(env!("CARGO"))
        .args(["run", "--quiet", "--example", "embed"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    // The registered `report` function was called from the script's loop...
    assert!(stdout.contains("step    0: loss "), "{stdout}");
    assert!(stdout.contains("step  500: loss "), "{stdout}");
    // ...and the host read back weights matching the generating model (checked inside
    // the example against w = [2, -1, 0.5], b = 0.3 to 1e-2).
    assert!(
        stdout.contains("weights match the generating model"),
        "{stdout}"
    );
}
