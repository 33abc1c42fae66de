//! `kiln export FILE NAME OUT.onnx`: runs the script, traces NAME on `example_args` and
//! writes a model that decodes with prost; usage and missing-name errors.

use std::path::Path;
use std::process::{Command, Output};

fn dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("kiln-cli-export-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// Runs `kiln export SCRIPT NAME OUT`.
fn export(script: &Path, name: &str, out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args([
            "export",
            &script.display().to_string(),
            name,
            &out.display().to_string(),
        ])
        .output()
        .expect("run kiln")
}

/// Each dim of a value's type: its `dim_param`, else `Some(size)`.
fn dims(v: &kiln::onnx::proto::ValueInfoProto) -> Vec<String> {
    let t = v.r#type.as_ref().and_then(|t| t.tensor_type.as_ref());
    let s = t.and_then(|t| t.shape.as_ref()).map(|s| s.dim.clone());
    s.unwrap_or_default()
        .iter()
        .map(|d| {
            d.dim_param
                .clone()
                .unwrap_or_else(|| format!("{:?}", d.dim_value))
        })
        .collect()
}

#[test]
fn export_writes_a_model_of_the_named_module() {
    // Its own folder: removing the shared parent raced with the other test's files.
    let d = dir().join("named");
    std::fs::create_dir_all(&d).expect("dir");
    let script = d.join("m.dl");
    let src = "import nn\nmodel = nn.Sequential(nn.Linear(3, 4), nn.ReLU())\n\
               def double(x):\n    return x * 2\n\
               example_args = {\"model\": (randn(2, 3),), \"double\": (ones(5),)}\n";
    std::fs::write(&script, src).expect("write script");
    let out = d.join("m.onnx");
    let o = export(&script, "model", &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m = kiln::onnx::decode(&std::fs::read(&out).expect("written")).expect("decodes");
    let g = m.graph.expect("graph");
    assert_eq!(g.input[0].name, "x");
    assert!(g.node.iter().any(|n| n.op_type == "Relu"));
    assert!(g.initializer.iter().any(|t| t.name == "0.weight"));
    // no dynamic_axes global: the batch axis keeps its traced size
    assert_eq!(dims(&g.input[0]), ["Some(2)", "Some(3)"]);

    let missing = export(&script, "nope", &out);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("must define nope"));
    let bad = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(["export", &script.display().to_string(), "a-b", "x.onnx"])
        .output()
        .expect("run kiln");
    assert_eq!(bad.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn export_takes_dynamic_axes_from_the_script() {
    let d = dir().join("dyn");
    std::fs::create_dir_all(&d).expect("dir");
    let script = d.join("m.dl");
    let src = "import nn\nmodel = nn.Sequential(nn.Linear(3, 4), nn.ReLU())\n\
               example_args = (randn(2, 3),)\ndynamic_axes = {\"x\": {0: \"batch\"}}\n";
    std::fs::write(&script, src).expect("write script");
    let out = d.join("m.onnx");
    let o = export(&script, "model", &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m = kiln::onnx::decode(&std::fs::read(&out).expect("written")).expect("decodes");
    let g = m.graph.expect("graph");
    assert_eq!(dims(&g.input[0]), ["batch", "Some(3)"]);
    assert_eq!(dims(&g.output[0]), ["batch", "Some(4)"]);
    let _ = std::fs::remove_dir_all(&d);
}
