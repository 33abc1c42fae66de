//! ONNX exports refused with a clear reason: an axis that cannot stay dynamic (naming
//! the node that fixes it), a training-mode dropout (a random fill), a print.

use super::*;

#[test]
fn an_axis_that_cannot_stay_dynamic_names_the_node_that_fixes_it() {
    let mut e = engine();
    // a reshape with explicit sizes inside a branch side keeps its traced size (the
    // request is not recorded in a region): refused, naming the `if` and its line
    let src = "def f(x):\n    h = x * 2\n    if h.mean() > 0:\n        h = h.reshape(-1).exp().reshape(x.shape[0], 3)\n    return h\ntrace(f, ones(4, 3), dynamic_axes={\"x\": {0: \"b\"}})\n";
    let err = e.run_source(src, "br.dl").expect_err("fixed by the branch");
    assert_eq!(err.kind, ErrorKind::ValueError);
    let m = &err.message;
    assert!(m.contains("axis 0 of x cannot stay dynamic"), "{m}");
    assert!(m.contains("if at br.dl:3:"), "{m}");
    assert!(m.contains("a branch side reshapes"), "{m}");
    // conv with a dynamic spatial size: the conv and its line
    let src = "W = ones(2, 1, 3, 3)\ndef c(x):\n    return conv2d(x, W)\ntrace(c, ones(2, 1, 6, 6), dynamic_axes={\"x\": {2: \"h\"}})\n";
    let err = e.run_source(src, "cv.dl").expect_err("fixed by conv");
    assert!(
        err.message.contains("conv2d at cv.dl:3:"),
        "{}",
        err.message
    );
    assert!(
        err.message.contains("other than the batch"),
        "{}",
        err.message
    );
    // a Python-level decision on the size: no node fixes it
    let src = "def h(x):\n    return x.reshape(int(x.shape[0]) * 3)\ntrace(h, ones(4, 3), dynamic_axes={\"x\": {0: \"b\"}})\n";
    let err = e.run_source(src, "py.dl").expect_err("fixed by Python");
    assert!(
        err.message.contains("Python code reads it"),
        "{}",
        err.message
    );
}

#[test]
fn a_training_mode_dropout_is_refused_and_eval_mode_exports() {
    let dir = temp_dir("dropout-train");
    let path = dir.join("m.onnx");
    let mut e = engine();
    e.set("out", path.display().to_string());
    let src = "import nn\nm = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.2))\nexport_onnx(m, (randn(3, 4),), out)\n";
    let err = e
        .run_source(src, "dt.dl")
        .expect_err("a random fill cannot export");
    assert_eq!(err.kind, ErrorKind::NotImplementedError);
    assert!(err.message.contains("random fill"), "{}", err.message);
    assert!(!path.exists(), "no file is written");
    e.run_source("m.eval()\nexport_onnx(m, (randn(3, 4),), out)\n", "de.dl")
        .expect("eval mode has no dropout");
    assert!(path.exists(), "the eval-mode model is written");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_print_in_the_zoo_dynamic_model_forward_is_refused_with_its_line() {
    let dir = temp_dir("zoo-print");
    let path = dir.join("m.onnx");
    let mut e = engine();
    e.set("out", path.display().to_string());
    let src = "import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.l1 = nn.Linear(4, 8)\n    def forward(self, x):\n        h = relu(self.l1(x))\n        if h.mean() > 0.5:\n            h = h * 2\n        print(\"mean of h:\", h.mean())\n        return h\nexport_onnx(M(), (randn(6, 4),), out, dynamic_axes={\"x\": {0: \"batch\"}})\n";
    let err = e.run_source(src, "zp.dl").expect_err("print cannot export");
    assert_eq!(err.kind, ErrorKind::NotImplementedError);
    assert!(err.message.contains("print"), "{}", err.message);
    assert!(err.message.contains("zp.dl:10:"), "{}", err.message);
    assert!(!path.exists(), "no file is written");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `mode` is a graph op (IrOp::ModeIndices) that ONNX has no operator for: the export
/// names it and its line, and writes nothing.
#[test]
fn mode_has_no_onnx_equivalent() {
    let dir = temp_dir("mode");
    let path = dir.join("m.onnx");
    let mut e = engine();
    e.set("out", path.display().to_string());
    let src = "def f(x):\n    return x.mode(1).values * 2\nexport_onnx(f, (randn(3, 4),), out)\n";
    let err = e.run_source(src, "md.dl").expect_err("no ONNX form");
    assert_eq!(err.kind, ErrorKind::NotImplementedError, "{}", err.message);
    assert!(
        err.message
            .contains("export_onnx: mode has no ONNX equivalent (at md.dl:2:"),
        "{}",
        err.message
    );
    assert!(!path.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// int32/uint8 values are captured, but the exporter lowers them only through a cast:
/// arithmetic on them is refused by name, with its line (not exported with int64 or
/// bool rules); float64 ones beyond elementwise arithmetic likewise (the model was
/// written with float32 constants: invalid).
#[test]
fn small_int_arithmetic_is_refused_by_name() {
    let dir = temp_dir("small-ints");
    let path = dir.join("s.onnx");
    let mut e = engine();
    e.set("out", path.display().to_string());
    let src = "def f(x):\n    y = x.float() * 2\n    return y, x // 3\nexport_onnx(f, (tensor([1, 7], dtype=int32),), out)\n";
    let err = e.run_source(src, "si.dl").expect_err("int32 arithmetic");
    assert_eq!(err.kind, ErrorKind::NotImplementedError, "{}", err.message);
    let m = &err.message;
    assert!(m.contains("on a int32 tensor"), "{m}");
    assert!(m.contains(".long()"), "{m}");
    assert!(m.contains("(at si.dl:3:"), "{m}");
    assert!(!path.exists());
    // float64: elementwise arithmetic exports, a matmul (float32 constants and kernels
    // in the lowering) is refused by name
    let src = "W = randn(3, 2, dtype=float64)\ndef g(x):\n    return (x * 2 + 1) @ W\nexport_onnx(g, (randn(4, 3, dtype=float64),), out)\n";
    let err = e.run_source(src, "f6.dl").expect_err("float64 matmul");
    let m = &err.message;
    assert!(m.contains("matmul on a float64 tensor"), "{m}");
    assert!(m.contains("(at f6.dl:3:"), "{m}");
    assert!(!path.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
