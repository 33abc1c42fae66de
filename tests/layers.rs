//! The layer check (docs/ARCHITECTURE.md "Layers"): scans every `crate::<module>` path
//! (and `super::` chain reaching the crate root) in src/**.rs and fails when a module
//! imports one of a higher layer. The few imports that still point up are listed in
//! `ALLOWED` (file, module); an entry that no longer occurs fails the test too, so the
//! list can only shrink.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, lowest first. A module may import modules of its own layer and of lower
/// ones. `ir` holds the IR's data types and the capture recorder interface the tensor
/// library reports to; `io` (file formats) reads and writes tensors.
const LAYERS: &[&[&str]] = &[
    &["source"],
    &["error"],
    &["syntax", "diagnostic"],
    &["tensor", "autograd", "ir"],
    &["io", "tensorboard", "plot"],
    &["ops"],
    &["compile"],
    &["onnx"],
    &["dist"],
    &["interp"],
    &["embed", "engine"],
];

/// Imports that still point up, to be removed (never added to).
const ALLOWED: &[(&str, &str)] = &[
    // The elementwise op enums (`BinaryOp`, `UnaryOp`) live in ops.rs, above the tensor
    // kernels and the IR that name them; moving them down is the op table's work.
    ("autograd/node.rs", "ops"),
    ("autograd/rules.rs", "ops"),
    ("ir/mod.rs", "ops"),
    ("tensor/inplace.rs", "ops"),
    ("tensor/kernels/binary.rs", "ops"),
    ("tensor/kernels/unary.rs", "ops"),
    ("tensor/views.rs", "ops"),
    // Capture guards and rebuilds Python values: the tracer's load guards (trace.rs),
    // the compile cache's keys (cache.rs), a compiled function's call through the
    // interpreter and its capture run (compiled.rs), a traced graph's call (traced.rs),
    // the outputs autodiff differentiates (autodiff.rs) and f-string formatting of
    // tensors (printing.rs) name interpreter values and functions.
    ("compile/autodiff/mod.rs", "interp"),
    ("compile/capture/cache.rs", "interp"),
    ("compile/capture/compiled.rs", "interp"),
    ("compile/runtime/printing.rs", "interp"),
    ("compile/capture/trace.rs", "interp"),
    ("compile/capture/traced.rs", "interp"),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .expect("read src dir")
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The top-level modules a line of code names through `crate::` (including each name of
/// a `crate::{a, b::c}` group); comments are skipped.
fn crate_refs(line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let preceded = rest[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
        rest = &rest[i + "crate::".len()..];
        if preceded {
            continue; // `$crate::` or an identifier ending in `crate`
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.push(head(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
            out.push(head(&item));
        } else {
            out.push(head(rest));
        }
    }
    out.retain(|m| !m.is_empty() && m != "self");
    out
}

/// The top-level modules a line of a file `depth` modules below the crate root names
/// through a chain of `super::` that reaches the root (`super::super::x` in
/// src/compile/passes/mod.rs, depth 2).
fn super_refs(line: &str, depth: usize) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("super::") {
        let preceded = rest[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
        rest = &rest[i..];
        let mut k = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            rest = r;
            k += 1;
        }
        if !preceded && k == depth {
            out.push(head(rest));
        }
    }
    out.retain(|m| !m.is_empty());
    out
}

/// How many modules below the crate root the file at `rel` (under src/) is.
fn depth(rel: &str) -> usize {
    let parts: Vec<&str> = rel.split('/').collect();
    match parts.last() {
        Some(&"mod.rs") => parts.len() - 1,
        _ => parts.len(),
    }
}

/// The leading identifier of `s`.
fn head(s: &str) -> String {
    s.trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Every (file under src/, imported top-level module) pair that points to a higher layer.
fn violations(src: &Path) -> BTreeSet<(String, String)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut found = BTreeSet::new();
    for f in files {
        let rel = f
            .strip_prefix(src)
            .expect("under src")
            .to_string_lossy()
            .replace('\\', "/");
        let own = rel.split('/').next().unwrap_or("").trim_end_matches(".rs");
        let Some(own_layer) = layer_of(own) else {
            assert!(
                own == "lib" || own == "main",
                "src/{rel}: module `{own}` is in no layer; add it to LAYERS in tests/layers.rs"
            );
            continue;
        };
        let text = fs::read_to_string(&f).expect("read source");
        for line in text.lines() {
            for m in crate_refs(line)
                .into_iter()
                .chain(super_refs(line, depth(&rel)))
            {
                let Some(l) = layer_of(&m) else {
                    continue; // a crate-root item (a re-export), not a module
                };
                if l > own_layer {
                    found.insert((rel.clone(), m));
                }
            }
        }
    }
    found
}

#[test]
fn no_layer_imports_a_higher_one() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = violations(&src);
    let allowed: BTreeSet<(String, String)> = ALLOWED
        .iter()
        .map(|(f, m)| (f.to_string(), m.to_string()))
        .collect();
    let new: Vec<_> = found.difference(&allowed).collect();
    assert!(
        new.is_empty(),
        "imports of a higher layer (see docs/ARCHITECTURE.md \"Layers\"): {new:?}"
    );
    let stale: Vec<_> = allowed.difference(&found).collect();
    assert!(
        stale.is_empty(),
        "allowlisted imports that no longer occur: remove them from ALLOWED: {stale:?}"
    );
}

#[test]
fn the_scan_sees_grouped_and_commented_paths() {
    assert_eq!(
        crate_refs("use crate::{compile::ir::IrOp, tensor, self};"),
        ["compile", "tensor"]
    );
    assert_eq!(
        crate_refs("    crate::interp::limits::poll(); // crate::engine"),
        ["interp"]
    );
    assert!(crate_refs("$crate::tensor::Tensor").is_empty());
    assert!(crate_refs("/// see crate::compile").is_empty());
}

#[test]
fn the_scan_sees_super_chains_that_reach_the_root() {
    assert_eq!(depth("compile/trace.rs"), 2);
    assert_eq!(depth("compile/mod.rs"), 1);
    assert_eq!(
        super_refs("use super::super::interp::value::Value;", 2),
        ["interp"]
    );
    assert!(super_refs("use super::ir::Graph;", 2).is_empty());
    assert!(super_refs("use super::super::super::x;", 2).is_empty());
    assert!(super_refs("use super::super::x;", 1).is_empty());
}

#[test]
fn every_module_of_the_crate_has_a_layer() {
    let lib = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
        .expect("read lib.rs");
    for line in lib.lines() {
        let line = line.trim();
        let decl = line
            .strip_prefix("pub mod ")
            .or_else(|| line.strip_prefix("pub(crate) mod "))
            .or_else(|| line.strip_prefix("mod "));
        if let Some(name) = decl.and_then(|d| d.strip_suffix(';')) {
            assert!(layer_of(name).is_some(), "module `{name}` is in no layer");
        }
    }
}
