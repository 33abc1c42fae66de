//! PyTorch API coverage: every name of src/interp/pytorch_names.txt (the names PyTorch
//! tutorials and common models use) must resolve in a fresh Engine, except those listed in
//! tests/api_missing.txt, and every name listed there must still be missing (the list
//! only shrinks: remove a name from it when you add it).
//!
//! How a name resolves, per namespace: `torch` — `torch.NAME` after `import torch`, or the
//! global `NAME`; `Tensor` — `hasattr(t, "NAME")` on a 2-D tensor that requires grad; any
//! other namespace `ns` — `import torch.<ns> as m; m.NAME`, or Kiln's own module
//! (`nn.functional`, `linalg`, `data` for `utils.data`, ...).

use kiln::Engine;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

const NAMES: &str = include_str!("../src/interp/pytorch_names.txt");
const MISSING: &str = include_str!("api_missing.txt");

/// `(namespace, name)` pairs of a `namespace name` file (comments and blank lines skipped).
fn pairs(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (ns, n) = l.split_once(' ').expect("a `namespace name` line");
            (ns.to_string(), n.trim().to_string())
        })
        .collect()
}

/// Kiln's own module for a PyTorch namespace (tried when `torch.<ns>` does not import).
fn kiln_module(ns: &str) -> &str {
    match ns {
        "torch.linalg" => "linalg",
        "torch.autograd" => "autograd",
        "utils.data" => "data",
        other => other,
    }
}

/// The script that prints each name of `names` (of namespace `ns`) that resolves.
fn probe_script(ns: &str, names: &[&str]) -> String {
    let mut s = String::from("_m = None\n_t = zeros(2, 2, requires_grad=True)\n");
    let module = if ns == "torch" {
        "torch".to_string()
    } else {
        format!("torch.{ns}")
    };
    for m in [module.as_str(), kiln_module(ns)] {
        if ns == "Tensor" {
            break;
        }
        s += &format!("if _m is None:\n    try:\n        import {m} as _m\n    except ImportError:\n        _m = None\n");
    }
    for n in names {
        let cond = match ns {
            "Tensor" => format!("hasattr(_t, '{n}')"),
            "torch" => format!("(_m is not None and hasattr(_m, '{n}')) or '{n}' in _globals"),
            _ => format!("_m is not None and hasattr(_m, '{n}')"),
        };
        s += &format!("if {cond}:\n    print('{n}')\n");
    }
    s
}

/// The names of `names` that resolve in a fresh engine.
fn resolved(ns: &str, names: &[&str]) -> BTreeSet<String> {
    let buf = Rc::new(RefCell::new(String::new()));
    let sink = buf.clone();
    let mut e = Engine::new();
    e.set_output(Box::new(move |s| sink.borrow_mut().push_str(s)));
    // The global names, builtins included, without importing anything.
    let mut src = String::from("_globals = set()\n");
    for n in names {
        src += &format!("try:\n    {n}\n    _globals.add('{n}')\nexcept NameError:\n    pass\n");
    }
    src += &probe_script(ns, names);
    if let Err(err) = e.run_source(&src, "coverage.dl") {
        panic!("probe of {ns} failed: {}", e.render_error(&err));
    }
    let out = buf.borrow().clone();
    out.lines().map(str::to_string).collect()
}

#[test]
fn pytorch_names_resolve_or_are_listed_missing() {
    let all = pairs(NAMES);
    let missing: BTreeSet<(String, String)> = pairs(MISSING).into_iter().collect();
    for m in &missing {
        assert!(
            all.contains(m),
            "api_missing.txt lists {} {}, not a PyTorch name of the list",
            m.0,
            m.1
        );
    }
    let mut by_ns: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (ns, n) in &all {
        by_ns.entry(ns).or_default().push(n);
    }
    let mut newly_resolved = vec![];
    let mut unlisted_missing = vec![];
    for (ns, names) in &by_ns {
        let found = resolved(ns, names);
        println!("{ns:20} {:4} of {:4}", found.len(), names.len());
        for n in names {
            let listed = missing.contains(&(ns.to_string(), n.to_string()));
            match (found.contains(*n), listed) {
                (true, true) => newly_resolved.push(format!("{ns} {n}")),
                (false, false) => unlisted_missing.push(format!("{ns} {n}")),
                _ => {}
            }
        }
    }
    assert!(
        newly_resolved.is_empty() && unlisted_missing.is_empty(),
        "resolve now (remove them from tests/api_missing.txt):\n{}\n\
         missing and not listed in tests/api_missing.txt:\n{}",
        newly_resolved.join("\n"),
        unlisted_missing.join("\n")
    );
}
