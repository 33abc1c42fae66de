//! The layer check (docs/ARCHITECTURE.md "Layers"): scans every `crate::<module>` path
//! (a `use crate::{...}` group spanning lines included, and `super::` chains reaching the
//! crate root) in src/**.rs and fails when a module imports one of a higher layer. A
//! crate-root re-export (`crate::Value`, `crate::Engine`) counts as the module it
//! re-exports (lib.rs's `pub use`). Every file under src/ must belong to a layer. The few
//! imports that still point up are listed in `ALLOWED` (file, module); an entry that no
//! longer occurs fails the test too, so the list can only shrink. Nothing under
//! compile/, onnx/, ops/, io/ or the bottom layer may import interp/, engine/ or
//! embed/.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, lowest first. A module may import modules of its own layer and of lower
/// ones. `optable` declares the primitive ops and their enums; `ir` holds the IR's data
/// types and the capture recorder interface the tensor library reports to; `io` (file
/// formats) reads and writes tensors.
const LAYERS: &[&[&str]] = &[
    &["source"],
    &["error"],
    &["syntax", "diagnostic", "pyfmt"],
    &["tensor", "autograd", "ir", "optable"],
    &["io", "tensorboard", "plot"],
    &["ops"],
    &["compile"],
    &["onnx"],
    &["dist"],
    &["interp"],
    &["embed", "engine"],
];

/// Imports that still point up, to be removed (never added to): none are left.
const ALLOWED: &[(&str, &str)] = &[];

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

/// The items lib.rs re-exports at the crate root (`pub use interp::value::Value;`), each
/// with the top-level module it comes from: `crate::Value` is an import of `interp`.
fn root_reexports(lib: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for line in lib.lines() {
        let Some(rest) = line.trim().strip_prefix("pub use ") else {
            continue;
        };
        let module = head(rest);
        let names = match (rest.find('{'), rest.rfind('}')) {
            (Some(a), Some(b)) if a < b => rest[a + 1..b].to_string(),
            _ => rest.trim_end_matches(';').to_string(),
        };
        for item in names.split(',') {
            let name = match item.rsplit_once(" as ") {
                Some((_, alias)) => alias,
                None => item.rsplit("::").next().unwrap_or(item),
            };
            let name = head(name);
            if !name.is_empty() {
                out.insert(name, module.clone());
            }
        }
    }
    out
}

/// The source text without its `//` comments (lines kept, so a `use` group that spans
/// lines is scanned whole).
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every (file under src/, imported top-level module) pair that points to a higher layer.
fn violations(src: &Path) -> BTreeSet<(String, String)> {
    let lib = fs::read_to_string(src.join("lib.rs")).expect("read lib.rs");
    let reexports = root_reexports(&lib);
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
        let code = code_of(&fs::read_to_string(&f).expect("read source"));
        for m in crate_refs(&code)
            .into_iter()
            .chain(super_refs(&code, depth(&rel)))
        {
            let m = reexports.get(&m).cloned().unwrap_or(m);
            let Some(l) = layer_of(&m) else {
                continue; // a crate-root item defined in lib.rs itself
            };
            if l > own_layer {
                found.insert((rel.clone(), m));
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
fn the_scan_sees_multiline_groups_and_root_reexports() {
    let code = code_of(
        "use crate::{\n    tensor::Tensor, // crate::engine\n    interp::value::Value,\n};",
    );
    assert_eq!(crate_refs(&code), ["tensor", "interp"]);
    let lib = "pub use engine::Engine;\npub use interp::value::Value;\n\
               pub use error::{Error, ErrorKind as Kind, Result};";
    let r = root_reexports(lib);
    assert_eq!(r.get("Value").map(String::as_str), Some("interp"));
    assert_eq!(r.get("Engine").map(String::as_str), Some("engine"));
    assert_eq!(r.get("Kind").map(String::as_str), Some("error"));
    assert_eq!(r.get("Result").map(String::as_str), Some("error"));
}

/// No layer below the interpreter is allowed an import of interp/, engine/ or embed/:
/// the capture's guards, cache and compiled callable live in interp/capture/, and the
/// bottom defines the interfaces (recorder, interrupt polling) the top implements.
#[test]
fn nothing_below_the_interpreter_imports_it() {
    let top = layer_of("interp").expect("interp has a layer");
    for (f, m) in ALLOWED {
        assert!(
            layer_of(m).is_some_and(|l| l < top),
            "ALLOWED may not list an import of the interpreter or the engine: ({f}, {m})"
        );
    }
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
    // And every layer entry is a module of the crate (a renamed folder is noticed).
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for name in LAYERS.iter().flat_map(|l| l.iter()) {
        assert!(
            src.join(name).is_dir() || src.join(format!("{name}.rs")).is_file(),
            "LAYERS names `{name}`, which is no module under src/"
        );
    }
}
