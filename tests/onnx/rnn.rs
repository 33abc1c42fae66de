//! ONNX export of nn.LSTM / nn.GRU as ONNX LSTM / GRU nodes (tests/onnx/lstm.dl,
//! tests/onnx/rnn_stack.dl): traced once with dynamic batch and length, then checked by
//! onnx.checker and ONNX Runtime against Kiln at three (batch, length) sizes, with the
//! initial state given and not. And the recurrences the export refuses, with the reason.

use super::*;

/// The dims of initializer `name` of `g`, if there is one.
fn init_dims(g: &kiln::onnx::proto::GraphProto, name: &str) -> Option<Vec<i64>> {
    g.initializer
        .iter()
        .find(|t| t.name == name)
        .map(|t| t.dims.clone())
}

#[test]
fn lstm_classifier_exports_as_onnx_lstm_at_three_sizes() {
    let py = python();
    // traced at batch 4, length 5
    for state in ["zeros", "state"] {
        for (b, n) in [("4", "5"), ("2", "9"), ("7", "2")] {
            let tag = format!("lstm-{state}-{b}-{n}");
            let dir = run_script_with("lstm", &tag, &[b, n, state]);
            let m = decode(&dir);
            let g = m.graph.as_ref().expect("a graph");
            let ops = op_types(g);
            let lstms = ops.iter().filter(|o| **o == "LSTM").count();
            assert_eq!(lstms, 2, "one LSTM node per layer: {ops:?}");
            // the input projection is the LSTM's own: the MatMuls left are the input
            // Linear's and the head's
            assert_eq!(ops.iter().filter(|o| **o == "MatMul").count(), 2, "{ops:?}");
            // gate-reordered weights made at export time, [1, 4H, in] and [1, 4H, H]
            assert_eq!(
                init_dims(g, "lstm.weight_ih_l0.onnx_W"),
                Some(vec![1, 32, 6])
            );
            assert_eq!(
                init_dims(g, "lstm.weight_hh_l1.onnx_R"),
                Some(vec![1, 32, 8])
            );
            assert_eq!(init_dims(g, "lstm.bias_ih_l1.onnx_B"), Some(vec![1, 64]));
            assert_eq!(init_dims(g, "lstm.weight_ih_l0"), None, "folded");
            let dims: Vec<Vec<String>> = g.input.iter().chain(&g.output).map(dims_text).collect();
            let mut want = vec![vec!["batch", "seq", "5"]];
            if state == "state" {
                want.extend([vec!["2", "batch", "8"], vec!["2", "batch", "8"]]);
            }
            want.extend([
                vec!["batch", "3"],
                vec!["batch", "seq", "8"],
                vec!["2", "batch", "8"],
            ]);
            assert_eq!(dims, want);
            if let Some(py) = &py {
                check_with_onnx_runtime(py, &format!("lstm ({state}, {b}, {n})"), &dir);
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// tests/onnx/rnn_stack.dl in `mode` ("uni": both axes dynamic; "bi": bidirectional
/// layers, the batch dynamic) at (length, batch) `sizes`, traced at (5, 3).
fn check_rnn_stack(mode: &str, sizes: [(&str, &str); 3]) {
    let py = python();
    let dirs = if mode == "bi" { 2 } else { 1 };
    for state in ["zeros", "state"] {
        for (n, b) in sizes {
            let tag = format!("rnn-stack-{mode}-{state}-{n}-{b}");
            let dir = run_script_with("rnn_stack", &tag, &[n, b, state, mode]);
            let m = decode(&dir);
            let g = m.graph.as_ref().expect("a graph");
            let ops = op_types(g);
            let count = |op: &str| ops.iter().filter(|o| **o == op).count();
            assert_eq!(
                count("GRU"),
                2 * dirs,
                "one per layer and direction: {ops:?}"
            );
            assert_eq!(count("LSTM"), dirs, "{ops:?}");
            let gru = g.node.iter().find(|n| n.op_type == "GRU").expect("a GRU");
            let lbr = gru
                .attribute
                .iter()
                .find(|a| a.name == "linear_before_reset");
            assert_eq!(lbr.map(|a| a.i), Some(1), "PyTorch's GRU");
            let w1 = init_dims(g, "gru.weight_ih_l1.onnx_W");
            assert_eq!(w1, Some(vec![1, 15, 5 * dirs as i64]));
            assert_eq!(init_dims(g, "gru.bias_ih_l0.onnx_B"), Some(vec![1, 30]));
            if dirs == 2 {
                let w = init_dims(g, "gru.weight_hh_l1_reverse.onnx_R");
                assert_eq!(w, Some(vec![1, 15, 5]));
            }
            // no bias: the LSTM node's B input is left out
            let lstm = g
                .node
                .iter()
                .find(|n| n.op_type == "LSTM")
                .expect("an LSTM");
            assert_eq!(lstm.input.get(3).map(String::as_str), Some(""));
            let seq = if dirs == 2 { "5" } else { "seq" };
            assert_eq!(dims_text(&g.input[0]), [seq, "batch", "4"]);
            let h_n = dims_text(&g.output[1]);
            assert_eq!(h_n, [(2 * dirs).to_string().as_str(), "batch", "5"]);
            if let Some(py) = &py {
                let what = format!("rnn stack ({mode}, {state}, {n}, {b})");
                check_with_onnx_runtime(py, &what, &dir);
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

#[test]
fn gru_and_biasless_lstm_keep_a_dynamic_batch_and_length() {
    check_rnn_stack("uni", [("5", "3"), ("8", "2"), ("2", "6")]);
}

/// The reverse direction runs over `flip(0)` of the sequence, whose length the capture
/// fixes (see `bidirectional_layers_with_a_dynamic_length_are_refused`).
#[test]
fn bidirectional_gru_and_lstm_keep_a_dynamic_batch() {
    check_rnn_stack("bi", [("5", "3"), ("5", "2"), ("5", "9")]);
}

/// The error of exporting `body` (a script defining `m` and `f(x)`) at `x`.
fn refusal(body: &str, x: &str) -> kiln::Error {
    let dir = temp_dir("rnn-refused");
    let path = dir.join("r.onnx");
    let mut e = engine();
    e.set("out", path.display().to_string());
    let src = format!("import nn\n{body}\nexport_onnx(f, ({x},), out)\n");
    let err = e.run_source(&src, "rnn_refused.dl").expect_err("refused");
    assert!(!path.exists(), "nothing written");
    let _ = std::fs::remove_dir_all(&dir);
    err
}

/// nn.LSTM with proj_size runs its steps in Kiln code (a Python list of steps): exported
/// through the ops of each step, unrolled at the traced length, with a dynamic batch.
#[test]
fn lstm_with_projections_exports_unrolled_with_a_dynamic_batch() {
    let py = python();
    for b in ["3", "2", "8"] {
        let dir = run_script_with("lstm_proj", &format!("lstm-proj-{b}"), &[b]);
        let m = decode(&dir);
        let g = m.graph.as_ref().expect("a graph");
        let ops = op_types(g);
        assert!(
            !ops.contains(&"LSTM") && ops.contains(&"Sigmoid"),
            "{ops:?}"
        );
        assert_eq!(dims_text(&g.input[0]), ["4", "batch", "3"]);
        if let Some(py) = &py {
            check_with_onnx_runtime(py, &format!("lstm proj (batch {b})"), &dir);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn recurrences_without_an_onnx_form_are_refused_with_the_reason() {
    // dropout between layers in training mode: a random fill
    let err = refusal(
        "m = nn.LSTM(3, 4, num_layers=2, dropout=0.5)\ndef f(x):\n    return m(x)[0]\n",
        "randn(5, 2, 3)",
    );
    assert_eq!(err.kind, ErrorKind::NotImplementedError);
    assert!(
        err.message.contains("a random fill (dropout"),
        "{}",
        err.message
    );
    // the layer op whose rows (each step's h and c) are read beyond the last step's c
    let body =
        "W = randn(16, 4)\ndef f(x):\n    rows = _lstm_layer(x, zeros(2, 4), zeros(2, 4), W)\n";
    for (ret, why) in [
        ("rows", "the rows are a graph output"),
        ("rows[:, :, 4:].sum(0)", "by index"),
    ] {
        let err = refusal(&format!("{body}    return {ret}\n"), "randn(5, 2, 16)");
        assert_eq!(err.kind, ErrorKind::NotImplementedError);
        let want = format!(
            "export_onnx: lstm_layer whose cell state is read at a step other than the last ({why})"
        );
        assert!(err.message.contains(&want), "{}", err.message);
    }
    // the layer op over weights that are not module parameters
    let err = refusal(
        "W = randn(12, 4)\ndef f(x):\n    return _gru_layer(x, zeros(2, 4), W * 1.0, None)\n",
        "randn(5, 2, 12)",
    );
    assert_eq!(err.kind, ErrorKind::NotImplementedError);
    assert!(
        err.message.contains(
            "export_onnx: gru_layer over an input other than `x @ weight_ih.T + bias` of module parameters"
        ),
        "{}",
        err.message
    );
    assert!(err.message.contains("rnn_refused.dl:"), "{}", err.message);
}

/// A bidirectional layer reverses its input with `flip(0)`, recorded as an
/// index_select by a constant of the traced length: that length is fixed (was a
/// silently wrong result of the Graph at other lengths), so a dynamic length is an
/// error.
#[test]
fn bidirectional_layers_with_a_dynamic_length_are_refused() {
    let mut e = engine();
    let src = "import nn\nm = nn.GRU(3, 4, bidirectional=True)\ndef f(x):\n    return m(x)[0]\n\
               trace(f, randn(5, 2, 3), dynamic_axes={\"x\": {0: \"seq\"}})\n";
    let err = e.run_source(src, "bi.dl").expect_err("a fixed length");
    assert_eq!(err.kind, ErrorKind::ValueError);
    assert!(
        err.message.contains("axis 0 of x cannot stay dynamic"),
        "{}",
        err.message
    );
}
