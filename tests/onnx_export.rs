//! ONNX export. Each tests/onnx/*.dl script traces a model, checks the Graph against
//! eager, and writes model.onnx with its example inputs (in_*.npy) and Kiln's outputs
//! (out_*.npy). Here the file is decoded back with prost (opset, interface, initializers,
//! op types) and, when a Python with `onnx` and `onnxruntime` is found
//! (`KILN_ONNX_PYTHON`, else `target/onnx-venv/bin/python`, which .ci/run creates),
//! checked by onnx.checker and run by ONNX Runtime (tests/onnx/check.py: outputs
//! within 1e-5 relative). Without that Python a `SKIPPED:` line in the test output says
//! that the ORT part did not run.

use kiln::onnx::proto::ModelProto;
use kiln::{Engine, ErrorKind};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kiln-onnx-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// The Python that has onnx + onnxruntime, if any.
fn python() -> Option<PathBuf> {
    let cands = [
        std::env::var_os("KILN_ONNX_PYTHON").map(PathBuf::from),
        Some(root().join("target/onnx-venv/bin/python")),
    ];
    let found = cands.into_iter().flatten().find(|p| {
        Command::new(p)
            .args(["-c", "import onnx, onnxruntime, numpy"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if found.is_none() {
        skip_notice();
    }
    found
}

/// Says once, where `cargo test` shows it, that the ONNX Runtime checks did not run:
/// written to the stdout handle, which libtest does not capture (it captures only
/// `print!`), so the line appears in the summary even when every test passes.
fn skip_notice() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        use std::io::Write;
        let _ = writeln!(
            std::io::stdout(),
            "\nSKIPPED: the ONNX Runtime checks of tests/onnx_export.rs (no Python with onnx + \
             onnxruntime; set KILN_ONNX_PYTHON or run .ci/run, which creates target/onnx-venv). \
             The Kiln-side checks ran."
        );
    });
}

/// Runs tests/onnx/NAME.dl writing into a fresh directory; returns it.
fn run_script(name: &str) -> PathBuf {
    run_script_with(name, name, &[])
}

/// Runs tests/onnx/NAME.dl with argv `[script, dir, extra...]`, `dir` a fresh
/// directory named after `tag`; returns it.
fn run_script_with(name: &str, tag: &str, extra: &[&str]) -> PathBuf {
    let out = temp_dir(tag);
    let script = root().join("tests/onnx").join(format!("{name}.dl"));
    let mut e = Engine::new();
    e.set_output(Box::new(|_| {}));
    let mut argv = vec![script.display().to_string(), out.display().to_string()];
    argv.extend(extra.iter().map(|s| s.to_string()));
    e.set_argv(argv);
    if let Err(err) = e.run_file(&script) {
        panic!("{name}.dl failed:\n{}", e.render_error(&err));
    }
    out
}

fn decode(dir: &Path) -> ModelProto {
    let bytes = std::fs::read(dir.join("model.onnx")).expect("model.onnx written");
    let m = kiln::onnx::decode(&bytes).expect("a valid protobuf");
    assert_eq!(kiln::onnx::encode(&m), bytes, "decode + encode round-trips");
    m
}

/// What the decoded model of one script must hold.
struct Expect {
    script: &'static str,
    inputs: &'static [&'static str],
    outputs: &'static [&'static str],
    /// Initializers named after module parameters / globals.
    params: &'static [&'static str],
    ops: &'static [&'static str],
}

const MODELS: &[Expect] = &[
    Expect {
        script: "mlp",
        inputs: &["x"],
        outputs: &["output"],
        params: &["model.0.weight", "model.0.bias", "model.7.weight"],
        ops: &[
            "MatMul",
            "Relu",
            "Erf",
            "Tanh",
            "LogSoftmax",
            "LayerNormalization",
        ],
    },
    Expect {
        script: "cnn",
        inputs: &["image"],
        outputs: &["probs"],
        params: &["c1.weight", "c1.bias", "c2.weight", "fc.bias"],
        ops: &[
            "Conv",
            "MaxPool",
            "AveragePool",
            "Sigmoid",
            "Softmax",
            "Reshape",
            "LayerNormalization",
            "Mul",
        ],
    },
    Expect {
        script: "ops",
        inputs: &["idx", "x"],
        outputs: &["output0", "output1"],
        params: &["E.weight", "W"],
        ops: &[
            "Gather",
            "Concat",
            "Where",
            "Clip",
            "ReduceSum",
            "ReduceL2",
            "CumSum",
            "ArgMax",
            "OneHot",
            "GatherElements",
            "Tile",
            "Expand",
            "Transpose",
        ],
    },
    Expect {
        script: "erfinv",
        inputs: &["x"],
        outputs: &["output"],
        params: &[],
        ops: &["Log", "Sqrt", "Where", "Less"],
    },
    Expect {
        script: "indexing",
        inputs: &["x", "i", "j", "k"],
        outputs: &["output0", "output1"],
        params: &[],
        ops: &[
            "Compress",
            "NonZero",
            "GatherND",
            "BitwiseNot",
            "BitwiseAnd",
            "BitwiseOr",
            "BitwiseXor",
            "Mod",
        ],
    },
    Expect {
        script: "attention",
        inputs: &["x"],
        outputs: &["output"],
        params: &["mha.in_proj_weight"],
        ops: &[
            "MatMul",
            "Softmax",
            "Range",
            "LessOrEqual",
            "IsNaN",
            "Where",
        ],
    },
    Expect {
        script: "linalg_det",
        inputs: &["x", "u"],
        outputs: &["output0", "output1"],
        params: &[],
        ops: &["Det", "ScatterElements"],
    },
    // the composites named by the call (call_nodes.rs), through their primitives
    Expect {
        script: "composites",
        inputs: &["x", "y", "m", "b"],
        outputs: &["output0", "output1"],
        params: &["W"],
        ops: &[
            "Atan",
            "Floor",
            "ReduceMax",
            "ReduceMin",
            "ReduceL2",
            "ScatterElements",
            "MatMul",
            "Gather",
            "Slice",
            "TopK",
        ],
    },
    // comparisons across dtypes in torch's result type (float64 vs int64, 0-d operands)
    Expect {
        script: "mixed_compare",
        inputs: &["x", "i", "y", "z", "b", "k"],
        outputs: &["output0", "output1", "output2", "output3", "output4"],
        params: &[],
        ops: &[
            "Greater",
            "LessOrEqual",
            "GreaterOrEqual",
            "Less",
            "Equal",
            "Cast",
            "ArgMax",
            "ArgMin",
        ],
    },
    // int32/uint8 inputs cast first (a uint8 image, int32 token ids)
    Expect {
        script: "small_ints",
        inputs: &["img", "tok"],
        outputs: &["output0", "output1"],
        params: &["W", "E"],
        ops: &["Cast", "Gather", "MatMul"],
    },
];

fn check_structure(x: &Expect, m: &ModelProto) {
    assert_eq!(m.ir_version, 8);
    assert_eq!(m.opset_import.len(), 1);
    assert_eq!(m.opset_import[0].version, kiln::onnx::OPSET);
    let g = m.graph.as_ref().expect("a graph");
    let names = |v: &[kiln::onnx::proto::ValueInfoProto]| {
        v.iter().map(|i| i.name.clone()).collect::<Vec<_>>()
    };
    assert_eq!(names(&g.input), x.inputs, "{}: inputs", x.script);
    assert_eq!(names(&g.output), x.outputs, "{}: outputs", x.script);
    for p in x.params {
        assert!(
            g.initializer.iter().any(|t| t.name == *p),
            "{}: no initializer {p}",
            x.script
        );
    }
    for op in x.ops {
        assert!(
            g.node.iter().any(|n| n.op_type == *op),
            "{}: no {op} node",
            x.script
        );
    }
}

#[test]
fn exported_models_decode_and_match_onnx_runtime() {
    let py = python();
    for x in MODELS {
        let dir = run_script(x.script);
        check_structure(x, &decode(&dir));
        if let Some(py) = &py {
            check_with_onnx_runtime(py, x.script, &dir);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Runs tests/onnx/check.py on `dir` (checker + ONNX Runtime vs Kiln's outputs).
fn check_with_onnx_runtime(py: &Path, what: &str, dir: &Path) {
    let out = Command::new(py)
        .arg(root().join("tests/onnx/check.py"))
        .arg(dir)
        .output()
        .expect("run check.py");
    assert!(
        out.status.success(),
        "{what}: ONNX check failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The op types of a graph's nodes (not descending into subgraphs).
fn op_types(g: &kiln::onnx::proto::GraphProto) -> Vec<&str> {
    g.node.iter().map(|n| n.op_type.as_str()).collect()
}

/// The subgraph attribute `attr` of the first `op` node of `g`.
fn subgraph<'a>(
    g: &'a kiln::onnx::proto::GraphProto,
    op: &str,
    attr: &str,
) -> &'a kiln::onnx::proto::GraphProto {
    let node = g.node.iter().find(|n| n.op_type == op).expect("the node");
    let a = node.attribute.iter().find(|a| a.name == attr).expect(attr);
    a.g.as_ref().expect("a graph attribute")
}

#[test]
fn data_dependent_if_and_while_export_as_if_and_loop() {
    let py = python();
    // traced on the "pos" inputs; "neg" takes the other branch and iteration count
    for case in ["pos", "neg"] {
        let dir = run_script_with("dynamic", &format!("dynamic-{case}"), &[case]);
        let m = decode(&dir);
        let g = m.graph.as_ref().expect("a graph");
        let ops = op_types(g);
        assert!(ops.contains(&"If") && ops.contains(&"Loop"), "{ops:?}");
        assert!(op_types(subgraph(g, "If", "then_branch")).contains(&"Relu"));
        assert!(op_types(subgraph(g, "If", "else_branch")).contains(&"Tanh"));
        let body = subgraph(g, "Loop", "body");
        assert_eq!(body.input.len(), 3, "iteration_num, cond_in, r");
        assert_eq!(body.output.len(), 2, "cond_out, r");
        assert!(op_types(body).contains(&"Div"), "{:?}", op_types(body));
        if let Some(py) = &py {
            check_with_onnx_runtime(py, &format!("dynamic ({case})"), &dir);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

fn engine() -> Engine {
    let mut e = Engine::new();
    e.set_output(Box::new(|_| {}));
    e
}

#[test]
fn unsupported_op_names_the_op_and_line_and_keeps_the_old_file() {
    let dir = temp_dir("unsupported");
    let path = dir.join("m.onnx");
    std::fs::write(&path, b"previous").expect("write");
    let mut e = engine();
    e.set("out", path.display().to_string());
    let src =
        "def f(x):\n    y = x * 2\n    print(y)\n    return y\nexport_onnx(f, (randn(4),), out)\n";
    let err = e
        .run_source(src, "eff.dl")
        .expect_err("print cannot export");
    assert_eq!(err.kind, ErrorKind::NotImplementedError);
    assert!(err.message.contains("print"), "{}", err.message);
    assert!(err.message.contains("eff.dl:3:"), "{}", err.message);
    assert_eq!(std::fs::read(&path).expect("read"), b"previous");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `linalg.inv` is a graph op, but ONNX's default domain has no inverse (Inverse is
/// com.microsoft's): the export names it and the line, and writes nothing.
#[test]
fn linalg_inv_has_no_onnx_equivalent() {
    let dir = temp_dir("linalg_inv");
    let path = dir.join("m.onnx");
    let mut e = engine();
    e.set("out", path.display().to_string());
    // torch.linalg.inv (stdlib/linalg.dl: the node's line is the stdlib's call) and the
    // Tensor method (the user's line)
    for (call, at) in [
        ("linalg.inv(y)", "linalg.dl:"),
        ("y.inverse()", "inv.dl:5:"),
    ] {
        let src = format!(
            "import linalg\n\ndef f(x):\n    y = x * 2.0\n    return {call} + 1.0\n\n\
             export_onnx(f, (eye(3) + ones(3, 3),), out)\n"
        );
        let err = e.run_source(&src, "inv.dl").expect_err("inv cannot export");
        assert_eq!(err.kind, ErrorKind::NotImplementedError);
        assert!(
            err.message
                .contains("export_onnx: linalg.inv has no ONNX equivalent (at "),
            "{}",
            err.message
        );
        assert!(err.message.contains(at), "{}", err.message);
        assert!(!path.exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn print_inside_an_exported_loop_names_print_and_its_line() {
    let dir = temp_dir("print");
    let path = dir.join("p.onnx");
    let mut e = engine();
    e.set("out", path.display().to_string());
    let src = "def f(x):\n    while x.sum() > 1:\n        x = x * 0.5\n        print(\"x\", x)\n    return x\nexport_onnx(f, (ones(3),), out)\n";
    let err = e.run_source(src, "pr.dl").expect_err("print cannot export");
    assert_eq!(err.kind, ErrorKind::NotImplementedError);
    assert!(err.message.contains("print"), "{}", err.message);
    assert!(err.message.contains("pr.dl:4:"), "{}", err.message);
    assert!(!path.exists(), "no file is written");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn graph_runs_only_on_the_traced_shapes_and_sees_parameter_updates() {
    let mut e = engine();
    e.run_source(
        "W = ones(3, 2)\ndef f(x):\n    return x @ W\ng = trace(f, ones(4, 3))\n",
        "g.dl",
    )
    .expect("trace");
    assert_eq!(
        e.eval_as::<f64>("g(ones(4, 3)).sum().item()")
            .expect("call"),
        24.0
    );
    // an in-place update of the global is seen (parameters are read by handle)
    e.run_source("W.mul_(2.0)\n", "upd.dl").expect("update");
    assert_eq!(
        e.eval_as::<f64>("g(ones(4, 3)).sum().item()")
            .expect("call"),
        48.0
    );
    let err = e.eval("g(ones(5, 3))").expect_err("other shape");
    assert_eq!(err.kind, ErrorKind::ValueError);
    assert!(
        err.message.contains("traced for (x float32(4, 3))"),
        "{}",
        err.message
    );
    let s: String = e.eval_as("str(g)").expect("str");
    assert!(s.contains("matmul"), "{s}");
    let r: String = e.eval_as("repr(g)").expect("repr");
    assert_eq!(r, "<Graph f (x: float32(4, 3)) -> (output: float32(4, 2))>");
}

#[test]
fn trace_of_an_uncapturable_function_says_why() {
    let mut e = engine();
    let src = "def f(x):\n    if x.sum().item() > 0:\n        return x\n    return -x\ntrace(f, ones(2))\n";
    let err = e.run_source(src, "brk.dl").expect_err("graph break");
    assert_eq!(err.kind, ErrorKind::RuntimeError);
    assert!(
        err.message.contains("cannot be captured"),
        "{}",
        err.message
    );
    assert!(err.message.contains("brk.dl:2:"), "{}", err.message);
}

/// The dims of a value info as text: sizes, or `dim_param` names.
fn dims_text(v: &kiln::onnx::proto::ValueInfoProto) -> Vec<String> {
    let t = v.r#type.as_ref().and_then(|t| t.tensor_type.as_ref());
    let dims = t.and_then(|t| t.shape.as_ref()).map(|s| s.dim.clone());
    dims.unwrap_or_default()
        .iter()
        .map(|d| match (&d.dim_value, &d.dim_param) {
            (Some(v), None) => v.to_string(),
            (None, Some(p)) => p.clone(),
            _ => "?".into(),
        })
        .collect()
}

#[test]
fn dynamic_axes_export_as_dim_params_and_run_at_other_sizes() {
    let py = python();
    // traced at batch 4, seq 5; run at the traced sizes and at two others
    for (b, n) in [("4", "5"), ("3", "7"), ("9", "3")] {
        let tag = format!("dynamic-axes-{b}-{n}");
        let dir = run_script_with("dynamic_axes", &tag, &[b, n]);
        let m = decode(&dir);
        let g = m.graph.as_ref().expect("a graph");
        let dims: Vec<Vec<String>> = g.input.iter().chain(&g.output).map(dims_text).collect();
        let want: Vec<Vec<&str>> = vec![
            vec!["batch", "6"],
            vec!["batch", "seq"],
            vec!["batch", "3"],
            vec!["batch+1", "4"],
            vec!["batch", "steps"],
        ];
        assert_eq!(dims, want);
        // no shape operand baked at the traced batch: reshape/expand read Shape
        let ops = op_types(g);
        assert!(ops.contains(&"Shape") && ops.contains(&"Expand"), "{ops:?}");
        if let Some(py) = &py {
            check_with_onnx_runtime(py, &format!("dynamic axes ({b}, {n})"), &dir);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn cnn_keeps_a_dynamic_batch() {
    let py = python();
    // traced at batch 4; run at the traced batch and at two others
    for b in ["4", "7", "2"] {
        let tag = format!("cnn-dynamic-{b}");
        let dir = run_script_with("cnn_dynamic", &tag, &[b]);
        let m = decode(&dir);
        let g = m.graph.as_ref().expect("a graph");
        let dims: Vec<Vec<String>> = g.input.iter().chain(&g.output).map(dims_text).collect();
        assert_eq!(dims, vec![vec!["batch", "1", "8", "8"], vec!["batch", "4"]]);
        let ops = op_types(g);
        assert!(ops.contains(&"Conv") && ops.contains(&"MaxPool"), "{ops:?}");
        if let Some(py) = &py {
            check_with_onnx_runtime(py, &format!("cnn dynamic batch {b}"), &dir);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn dynamic_axes_check_the_other_axes_and_say_what_is_wrong() {
    let mut e = engine();
    e.run_source(
        "W = ones(3, 2)\ndef f(x):\n    return (x @ W).sum(1)\ng = trace(f, ones(4, 3), dynamic_axes={\"x\": [0]})\n",
        "d.dl",
    )
    .expect("trace");
    let r: String = e.eval_as("repr(g)").expect("repr");
    assert_eq!(
        r,
        "<Graph f (x: float32(x_dynamic_axes_1, 3)) -> (output: float32(x_dynamic_axes_1))>"
    );
    assert_eq!(
        e.eval_as::<f64>("g(ones(7, 3)).sum().item()")
            .expect("call"),
        42.0
    );
    let err = e.eval("g(ones(7, 4))").expect_err("a fixed axis changed");
    assert_eq!(err.kind, ErrorKind::ValueError);
    assert!(
        err.message.contains("x_dynamic_axes_1, 3"),
        "{}",
        err.message
    );
    let bad = [
        (
            "trace(f, ones(4, 3), dynamic_axes={\"y\": [0]})",
            "no input or output named 'y'",
        ),
        (
            "trace(f, ones(1, 3), dynamic_axes={\"x\": [0]})",
            "has size 1",
        ),
        (
            "trace(f, ones(4, 3), dynamic_axes={\"x\": [2]})",
            "out of range",
        ),
        (
            "trace(f, ones(4, 3), dynamic_axes={\"output\": {1: \"n\"}})",
            "out of range",
        ),
        ("trace(f, ones(4, 3), dynamic_axes=[0])", "must be a dict"),
    ];
    e.run_source("def two(a, b):\n    return a.sum() + b.sum()\n", "two.dl")
        .expect("def");
    let bad2 = (
        "trace(two, ones(4), ones(5), dynamic_axes={\"a\": {0: \"n\"}, \"b\": {0: \"n\"}})",
        "'n' names axes that can differ",
    );
    for (src, want) in bad.into_iter().chain([bad2]) {
        let err = e.eval(src).expect_err(src);
        assert!(err.message.contains(want), "{src}: {}", err.message);
    }
    // a Python-level decision on a size (here `int()`) fixes the axis; `x.shape[0] * 3`
    // alone is a symbolic int and stays dynamic (issue 26), so the program converts it
    let src = "def h(x):\n    return x.reshape(int(x.shape[0]) * 3)\ntrace(h, ones(4, 3), dynamic_axes={\"x\": {0: \"b\"}})\n";
    let err = e.run_source(src, "fixed.dl").expect_err("a fixed axis");
    assert_eq!(err.kind, ErrorKind::ValueError);
    assert!(
        err.message.contains("cannot stay dynamic"),
        "{}",
        err.message
    );
}

#[test]
fn gru_over_a_symbolic_sequence_length_exports_as_one_loop() {
    let py = python();
    // traced at length 4; the same file runs at the traced length and at 2 and 9
    for len in ["4", "2", "9"] {
        let dir = run_script_with("gru", &format!("gru-{len}"), &[len]);
        let m = decode(&dir);
        let g = m.graph.as_ref().expect("a graph");
        let names: Vec<&str> = g.input.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["xs", "h"]);
        assert_eq!(dims_text(&g.input[0]), ["seq", "2", "3"]);
        for p in ["cell.weight_ih", "cell.weight_hh", "head.weight"] {
            assert!(g.initializer.iter().any(|t| t.name == p), "no {p}");
        }
        let ops = op_types(g);
        let loops = ops.iter().filter(|o| **o == "Loop").count();
        assert_eq!(loops, 1, "one Loop, not an unrolled body: {ops:?}");
        assert!(
            ops.contains(&"Shape"),
            "trip count read at run time: {ops:?}"
        );
        let body = op_types(subgraph(g, "Loop", "body"));
        for op in ["Gather", "Sigmoid", "Tanh", "MatMul"] {
            assert!(body.contains(&op), "no {op} in the body: {body:?}");
        }
        if let Some(py) = &py {
            check_with_onnx_runtime(py, &format!("gru (length {len})"), &dir);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The dims of every value info of `g` and of its subgraphs (If sides, Loop bodies),
/// as text.
fn all_dims(g: &kiln::onnx::proto::GraphProto, out: &mut Vec<Vec<String>>) {
    out.extend(g.input.iter().chain(&g.output).map(dims_text));
    for n in &g.node {
        for a in &n.attribute {
            if let Some(sub) = &a.g {
                all_dims(sub, out);
            }
        }
    }
}

#[test]
fn dynamic_model_branch_keeps_a_dynamic_batch() {
    let py = python();
    // traced at batch 6 on the `then` side; both sides run at three batch sizes
    let cases = [
        ("6", "20.0", "then"),
        ("3", "0.0", "else"),
        ("11", "20.0", "then"),
        ("9", "0.0", "else"),
    ];
    for (b, shift, side) in cases {
        let tag = format!("dynamic-model-{b}-{side}");
        let dir = run_script_with("dynamic_model", &tag, &[b, shift, side]);
        let m = decode(&dir);
        let g = m.graph.as_ref().expect("a graph");
        assert_eq!(dims_text(&g.input[0]), ["batch", "4"]);
        assert_eq!(dims_text(&g.output[0]), ["batch", "1"]);
        assert!(op_types(g).contains(&"If"), "{:?}", op_types(g));
        // both sides' results are typed with the symbolic batch
        for side in ["then_branch", "else_branch"] {
            let sub = subgraph(g, "If", side);
            let dims: Vec<Vec<String>> = sub.output.iter().map(dims_text).collect();
            assert_eq!(dims, [["batch", "8"]], "{side}");
        }
        if let Some(py) = &py {
            check_with_onnx_runtime(py, &format!("dynamic model ({b}, {side})"), &dir);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_data_dependent_while_keeps_a_dynamic_axis() {
    let py = python();
    // traced at length 4; other lengths and scales change the trip count and the side
    for (n, scale) in [("4", "30.0"), ("7", "2.0"), ("13", "100.0")] {
        let dir = run_script_with("dynamic_while", &format!("while-{n}"), &[n, scale]);
        let m = decode(&dir);
        let g = m.graph.as_ref().expect("a graph");
        let ops = op_types(g);
        assert!(ops.contains(&"Loop") && ops.contains(&"If"), "{ops:?}");
        let body = subgraph(g, "Loop", "body");
        assert_eq!(dims_text(&body.input[2]), ["n"], "the carried value");
        assert_eq!(dims_text(&body.output[1]), ["n"]);
        let mut dims = Vec::new();
        all_dims(g, &mut dims);
        assert!(
            dims.iter().all(|d| d.iter().all(|s| s != "4")),
            "no dim baked at the traced length: {dims:?}"
        );
        if let Some(py) = &py {
            check_with_onnx_runtime(py, &format!("while (length {n})"), &dir);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn zoo_cnn_keeps_a_dynamic_batch() {
    let py = python();
    for b in ["6", "2", "9"] {
        let dir = run_script_with("zoo_cnn", &format!("zoo-cnn-{b}"), &[b]);
        let m = decode(&dir);
        let g = m.graph.as_ref().expect("a graph");
        assert_eq!(dims_text(&g.input[0]), ["batch", "1", "8", "8"]);
        assert_eq!(dims_text(&g.output[0]), ["batch", "3"]);
        let ops = op_types(g);
        assert!(ops.contains(&"Conv") && ops.contains(&"MaxPool"), "{ops:?}");
        if let Some(py) = &py {
            check_with_onnx_runtime(py, &format!("zoo cnn (batch {b})"), &dir);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn transformer_keeps_a_dynamic_sequence_length() {
    let py = python();
    // traced at length 6; run at 6, 3 and 8
    for n in ["6", "3", "8"] {
        let dir = run_script_with("transformer", &format!("transformer-{n}"), &[n]);
        let m = decode(&dir);
        let g = m.graph.as_ref().expect("a graph");
        assert_eq!(dims_text(&g.input[0]), ["1", "seq"]);
        assert_eq!(dims_text(&g.output[0]), ["1", "seq", "11"]);
        let ops = op_types(g);
        for op in ["Shape", "Slice", "Reshape", "Softmax", "Where", "Erf"] {
            assert!(ops.contains(&op), "no {op}: {ops:?}");
        }
        if let Some(py) = &py {
            check_with_onnx_runtime(py, &format!("transformer (length {n})"), &dir);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn transformer_with_a_fixed_batch_keeps_a_dynamic_sequence_length() {
    let py = python();
    // batch 2: the embedding's `reshape(B, T, D)` splits 2*seq into (2, seq)
    for n in ["6", "3", "8"] {
        let dir = run_script_with("transformer", &format!("transformer-b2-{n}"), &[n, "2"]);
        let m = decode(&dir);
        let g = m.graph.as_ref().expect("a graph");
        assert_eq!(dims_text(&g.input[0]), ["2", "seq"]);
        assert_eq!(dims_text(&g.output[0]), ["2", "seq", "11"]);
        let ops = op_types(g);
        for op in ["Shape", "Reshape", "Concat"] {
            assert!(ops.contains(&op), "no {op}: {ops:?}");
        }
        if let Some(py) = &py {
            check_with_onnx_runtime(py, &format!("transformer (batch 2, length {n})"), &dir);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

// The exports refused with a reason (tests/onnx/refusals.rs).
#[path = "onnx/refusals.rs"]
mod refusals;

// nn.LSTM / nn.GRU as ONNX LSTM / GRU (tests/onnx/rnn.rs).
#[path = "onnx/rnn.rs"]
mod rnn;
