//! Runs each tests/dl/test_*.dl; a failing in-language `assert` fails the Rust test.

use kiln::Engine;
use std::path::Path;

#[test]
fn dl_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::env::set_current_dir(root).expect("cd to the crate root");
    let mut files: Vec<_> = std::fs::read_dir(root.join("tests/dl"))
        .expect("tests/dl exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("test_") && n.ends_with(".dl"))
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no tests/dl/test_*.dl files");
    let mut failures = Vec::new();
    for f in &files {
        let mut e = Engine::new();
        e.set_output(Box::new(|_| {}));
        let rel = f.strip_prefix(root).unwrap_or(f);
        if let Err(err) = e.run_file(rel) {
            failures.push(format!("{}:\n{}", f.display(), e.render_error(&err)));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
