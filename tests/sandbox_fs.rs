//! A sandboxed engine touches no file: every script-reachable function that takes a path
//! (the `io` module's, `export_onnx`, `Graph.save_onnx`, `Module.save`/`load`, `save`/
//! `load` (torch.save/load), SummaryWriter's `_tensorboard` natives, pyplot's `savefig`
//! and `imread`) is refused
//! with `PermissionError` by the one gate (`kiln::io::fs_gate`), even when the script
//! holds the function from before the sandbox was switched on. The case table is checked
//! against the registries, so a new path-taking function without a case fails here.

use kiln::interp::builtins::{checkpoint, export, iomod, plotmod, tbmod};
use kiln::{Engine, ErrorKind};
use std::path::Path;

/// (callable name, a call that reaches the file system with the path `P`).
const CASES: &[(&str, &str)] = &[
    ("load_npy", "io.load_npy(P)"),
    ("save_npy", "io.save_npy(P, ones(2))"),
    ("load_csv", "io.load_csv(P)"),
    ("load_safetensors", "io.load_safetensors(P)"),
    ("save_safetensors", "io.save_safetensors({'w': ones(2)}, P)"),
    (
        "export_onnx",
        "export_onnx(lambda x: x * 2.0, (ones(2),), P)",
    ),
    (
        "export_onnx",
        "export_onnx(trace(lambda x: x * 2.0, ones(2)), P)",
    ),
    (
        "save_onnx",
        "trace(lambda x: x * 2.0, ones(2)).save_onnx(P)",
    ),
    ("trace", "trace(lambda x: x * 2.0, ones(2)).save_onnx(P)"),
    // torch.save / torch.load (checkpoint.rs)
    ("save", "save({'w': ones(2)}, P)"),
    ("save", "torch.save({'step': 1, 'w': ones(2)}, P)"),
    ("load", "load(P)"),
    ("load", "torch.load(P)"),
    // SummaryWriter (the native _tensorboard module: every function takes a path)
    ("create", "SummaryWriter(P)"),
    ("create", "_tb.create(P, '')"),
    ("scalar", "_tb.scalar(P, 'loss', 1.0, 0, 0.0)"),
    ("text", "_tb.text(P, 'note', 'hi', 0, 0.0)"),
    (
        "histogram",
        "_tb.histogram(P, 'h', ones(4), 0, 0.0, 'tensorflow')",
    ),
    ("image", "_tb.image(P, 'img', ones(3, 2, 2), 0, 0.0, 'CHW')"),
    ("read_events", "_tb.read_events(P)"),
    ("read_events", "read_events(P)"),
    // pyplot (the native _plot module)
    (
        "savefig",
        "plt.plot([1.0, 2.0])\nplt.savefig(P, format='png')",
    ),
    ("savefig", "plt.figure().savefig(P, format='svg')"),
    ("imread", "_plot.imread(P)"),
    ("imread", "plt.imread(P)"),
];

/// Functions of the native modules above that touch no file (each other function of
/// those modules must have a case).
const NO_FILE: &[&str] = &[
    "default_log_dir",
    "png_base64",
    "displays",
    "now",
    "figure",
    "close",
    "plot",
    "scatter",
    "hist",
    "imshow",
    "set_title",
    "set_xlabel",
    "set_ylabel",
    "legend",
    "grid",
    "set_xlim",
    "set_ylim",
    "set_yscale",
];

/// Makes an engine with `io` bound and a victim file in `dir`; then turns the sandbox on.
fn sandboxed(dir: &Path) -> Engine {
    let mut e = Engine::new();
    e.set_output(Box::new(|_| {}));
    let p = dir.join("victim.bin");
    std::fs::write(&p, b"precious").unwrap();
    e.set("P", p.display().to_string());
    // imported before the sandbox: the module stays bound, its functions must still stop
    e.eval(
        "import io\nimport nn\nimport torch\nimport _tensorboard as _tb\nimport _plot\n\
         import matplotlib.pyplot as plt\nfrom utils.tensorboard import SummaryWriter, read_events\n\
         lin = nn.Linear(2, 2)",
    )
    .unwrap();
    e.set_sandbox(true);
    e
}

#[test]
fn every_path_taking_function_is_covered() {
    let io_names: Vec<String> = iomod::io_module()
        .index
        .borrow()
        .keys()
        .filter(|k| !k.starts_with("__"))
        .map(|k| k.to_string())
        .collect();
    let globals = export::GLOBALS
        .iter()
        .chain(checkpoint::GLOBALS)
        .map(|(n, _)| n.to_string());
    let methods = export::GRAPH_METHODS.iter().map(|n| n.to_string());
    let natives: Vec<String> = [tbmod::tensorboard_module(), plotmod::plot_module()]
        .iter()
        .flat_map(|m| {
            m.index
                .borrow()
                .keys()
                .filter(|k| !k.starts_with("__") && !NO_FILE.contains(&&***k))
                .map(|k| k.to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    for name in io_names
        .into_iter()
        .chain(globals)
        .chain(methods)
        .chain(natives)
    {
        assert!(
            CASES.iter().any(|(n, _)| *n == name),
            "no sandbox case for '{name}'"
        );
    }
}

#[test]
fn sandbox_refuses_every_file_access_with_permission_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = sandboxed(dir.path());
    for (name, call) in CASES {
        let err = e.eval(call).unwrap_err();
        assert_eq!(
            err.kind,
            ErrorKind::PermissionError,
            "{name}: {call}: {err}"
        );
        assert!(err.message.contains("sandbox"), "{}", err.message);
    }
    // a script can catch it as the OSError it is
    let caught: String = e
        .eval_as("r = ''\ntry:\n    io.save_npy(P, ones(1))\nexcept OSError as x:\n    r = type(x).__name__\nr")
        .unwrap();
    assert_eq!(caught, "PermissionError");
    // Module.save / load go through `import io`, refused as before
    for call in ["lin.save(P)", "lin.load(P)"] {
        let err = e.eval(call).unwrap_err();
        assert_eq!(err.kind, ErrorKind::ImportError, "{call}");
    }
    // nothing was written: the victim is intact and no temporary file appeared
    assert_eq!(
        std::fs::read(dir.path().join("victim.bin")).unwrap(),
        b"precious"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn the_gate_opens_again_outside_the_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = sandboxed(dir.path());
    assert!(e.eval("io.save_npy(P, ones(2))").is_err());
    // the host's own calls are not sandboxed outside a run
    let out = dir.path().join("host.npy");
    let a = kiln::io::Array::from_f32(vec![1], vec![1.0]).unwrap();
    kiln::io::save_npy(&out, &a).unwrap();
    e.set_sandbox(false);
    e.eval("io.save_npy(P, ones(2))").unwrap();
    assert_eq!(e.eval_as::<i64>("io.load_npy(P).numel()").unwrap(), 2);
}
