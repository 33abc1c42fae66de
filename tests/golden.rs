//! Golden tests: every tests/golden/**/*.dl runs through the Engine; stdout (plus the
//! rendered error, for scripts that fail) must equal the `.out` / `.err` file.
//! `KILN_BLESS=1 cargo test --test golden` rewrites the expectations.
//! Each script gets `argv == [its path, a fresh empty scratch directory]` for the files it
//! writes (tests/golden/stdlib/files_io.dl); the directory is removed afterwards.
//! `w11_matches_cpython`: the w11 benchmark programs (benches/w11/*.py), shrunk to the
//! sizes in benches/w11/small.txt, print exactly CPython 3.11's output (tests/w11/*.out,
//! made by `python3 benches/w11/shrink.py NAME | python3 -`).

use kiln::Engine;
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

fn scripts(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            scripts(&p, out);
        } else if p.extension().is_some_and(|x| x == "dl") {
            out.push(p);
        }
    }
}

/// Runs one script; returns (expected-file path, actual text).
fn run(path: &Path, scratch: &Path) -> (PathBuf, String) {
    let buf = Rc::new(RefCell::new(String::new()));
    let sink = buf.clone();
    let mut e = Engine::new();
    e.set_output(Box::new(move |s| sink.borrow_mut().push_str(s)));
    let rel = path
        .strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap_or(path);
    e.set_argv(vec![
        rel.display().to_string(),
        scratch.display().to_string(),
    ]);
    let r = e.run_file(rel);
    let mut text = buf.borrow().clone();
    match r {
        Ok(()) => (path.with_extension("out"), text),
        Err(err) => {
            text.push_str(&e.render_error(&err));
            (path.with_extension("err"), text)
        }
    }
}

#[test]
fn golden() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::env::set_current_dir(root).expect("cd to the crate root");
    let mut files = Vec::new();
    scripts(&root.join("tests/golden"), &mut files);
    files.sort();
    assert!(!files.is_empty(), "no golden scripts found");
    let bless = std::env::var_os("KILN_BLESS").is_some();
    let mut failures = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let scratch = std::env::temp_dir().join(format!("kiln_golden_{}_{i}", std::process::id()));
        std::fs::create_dir_all(&scratch).expect("create a scratch directory");
        let (expect_path, actual) = run(f, &scratch);
        let _ = std::fs::remove_dir_all(&scratch);
        if bless {
            let other = if expect_path.extension().is_some_and(|x| x == "out") {
                f.with_extension("err")
            } else {
                f.with_extension("out")
            };
            let _ = std::fs::remove_file(other);
            std::fs::write(&expect_path, &actual).expect("write expectation");
            continue;
        }
        match std::fs::read_to_string(&expect_path) {
            Ok(expected) if expected == actual => {}
            Ok(expected) => failures.push(format!(
                "{}: output differs\n--- expected\n{}\n--- actual\n{}",
                f.display(),
                expected,
                actual
            )),
            Err(_) => failures.push(format!(
                "{}: missing {} ; actual output:\n{}",
                f.display(),
                expect_path.display(),
                actual
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} golden failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A w11 program with its size constants replaced as benches/w11/small.txt says (the
/// rewrite benches/w11/shrink.py does for CPython).
fn shrink_w11(src: &str, sizes: &[&str]) -> String {
    let mut lines: Vec<String> = src.split('\n').map(str::to_string).collect();
    for kv in sizes {
        let (key, value) = kv.split_once('=').expect("NAME=VALUE in small.txt");
        let prefix = format!("{key} = ");
        let hits: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i].starts_with(&prefix))
            .collect();
        assert_eq!(hits.len(), 1, "exactly one line `{prefix}...`");
        lines[hits[0]] = format!("{key} = {value}");
    }
    lines.join("\n")
}

#[test]
fn w11_matches_cpython() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let table = std::fs::read_to_string(root.join("benches/w11/small.txt")).expect("small.txt");
    let mut failures = Vec::new();
    let mut count = 0;
    for line in table
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let mut parts = line.split_whitespace();
        let name = parts.next().expect("a program name");
        let sizes: Vec<&str> = parts.collect();
        let src = std::fs::read_to_string(root.join(format!("benches/w11/{name}.py")))
            .expect("a w11 program");
        let expected = std::fs::read_to_string(root.join(format!("tests/w11/{name}.out")))
            .expect("CPython's output");
        let buf = Rc::new(RefCell::new(String::new()));
        let sink = buf.clone();
        let mut e = Engine::new();
        e.set_output(Box::new(move |s| sink.borrow_mut().push_str(s)));
        let r = e.run_source(&shrink_w11(&src, &sizes), &format!("{name}.py"));
        let mut actual = buf.borrow().clone();
        if let Err(err) = r {
            actual.push_str(&e.render_error(&err));
        }
        if actual != expected {
            failures.push(format!(
                "{name}: output differs\n--- CPython\n{expected}\n--- Kiln\n{actual}"
            ));
        }
        count += 1;
    }
    assert_eq!(
        count, 11,
        "the ten timed w11 programs and modern are in small.txt"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
