//! The suite's table: Kiln's variants (which script runs each), and the rows that compare
//! a Kiln variant with a peer, with another Kiln variant or with an absolute bound, with
//! BENCH.md's target for each.

/// Which figure of a sample a row compares, and which direction is better.
#[derive(Clone, Copy)]
pub enum Metric {
    /// Seconds (the median), lower is better.
    Seconds,
    /// An extra key, lower is better (us/op, ms, compiles, first step seconds).
    Lower(&'static str),
    /// An extra key, higher is better (GFLOP/s, steps/s, tokens/s).
    Higher(&'static str),
}

/// What the Kiln variant of a row is compared with.
#[derive(Clone, Copy)]
pub enum Versus {
    /// A peer's sample (benches/peers/), with its label.
    Peer(&'static str, &'static str),
    /// Another Kiln variant (compiled against eager).
    Kiln(&'static str),
    /// Nothing: an absolute bound on Kiln's own figure.
    Alone,
}

/// A row's target (BENCH.md).
#[derive(Clone, Copy)]
pub enum Target {
    /// No target: the ratio is shown for information.
    Info,
    /// Kiln / other, at least (Higher) or at most (Lower, Seconds) this.
    Ratio(f64),
    /// Kiln's own figure, at least or at most this.
    Absolute(f64),
    /// An absolute figure for the reference machine, where the peer measured `recorded`:
    /// judged as the ratio `bound / recorded` against the peer measured live in the same
    /// run (BENCH.md: machines differ), or absolutely when the peer did not run.
    VsRecorded { bound: f64, recorded: f64 },
}

pub struct Row {
    pub workload: &'static str,
    pub kiln: &'static str,
    pub versus: Versus,
    pub metric: Metric,
    pub target: Target,
}

pub(crate) const fn row(
    workload: &'static str,
    kiln: &'static str,
    versus: Versus,
    metric: Metric,
    target: Target,
) -> Row {
    Row {
        workload,
        kiln,
        versus,
        metric,
        target,
    }
}

/// One run of a Kiln workload script: `KILN_BENCH_ONLY=run kiln benches/<script>`, which
/// reports `samples` (one process per run, so each has its own peak RSS).
pub struct Variant {
    pub script: &'static str,
    pub run: &'static str,
    pub samples: &'static [&'static str],
}

const fn v(script: &'static str, run: &'static str, samples: &'static [&'static str]) -> Variant {
    Variant {
        script,
        run,
        samples,
    }
}

pub const VARIANTS: &[Variant] = &[
    v("w1_fib.dl", "w1_fib", &["w1_fib"]),
    v("w1_loop.dl", "w1_loop", &["w1_loop"]),
    v("w1_micrograd.dl", "w1_micrograd", &["w1_micrograd"]),
    v("w2_tiny.dl", "w2_eager", &["w2_eager"]),
    v("w2_tiny.dl", "w2_grad", &["w2_grad"]),
    v("w3_gelu.dl", "w3_eager", &["w3_eager"]),
    v("w3_gelu.dl", "w3_compiled", &["w3_compiled"]),
    v("w4_matmul.dl", "w4_matmul_512", &["w4_matmul_512"]),
    v("w4_matmul.dl", "w4_matmul_1024", &["w4_matmul_1024"]),
    v("w5_mlp.dl", "w5_eager_sgd", &["w5_eager_sgd"]),
    v("w5_mlp.dl", "w5_eager_adam", &["w5_eager_adam"]),
    v("w5_mlp.dl", "w5_compiled_sgd", &["w5_compiled_sgd"]),
    v("w5_mlp.dl", "w5_compiled_adam", &["w5_compiled_adam"]),
    v("w7_rnn.dl", "w7_eager", &["w7_eager"]),
    v("w7_rnn.dl", "w7_compiled", &["w7_compiled"]),
    v(
        "w7_rnn.dl",
        "w7_forward",
        &["w7_forward_eager", "w7_forward_compiled"],
    ),
    v("w8_gpt.dl", "w8_eager", &["w8_eager"]),
    v("w8_gpt.dl", "w8_compiled", &["w8_compiled"]),
    v("w9_cnn.dl", "w9_eager", &["w9_eager"]),
    v("w9_cnn.dl", "w9_compiled", &["w9_compiled"]),
    v("w10_generate.dl", "w10_eager", &["w10_eager"]),
    v("w10_generate.dl", "w10_compiled", &["w10_compiled"]),
    v("w12_ops.dl", "w12_ops", crate::w12::KILN),
];

use Metric::{Higher, Lower, Seconds};
use Target::{Absolute, Info, Ratio, VsRecorded};
use Versus::{Alone, Kiln, Peer};

pub const ROWS: &[Row] = &[
    row(
        "W1",
        "w1_fib",
        Peer("w1_fib", "CPython fib(27)"),
        Seconds,
        Ratio(0.5),
    ),
    row(
        "W1",
        "w1_loop",
        Peer("w1_loop", "CPython float loop 3M"),
        Seconds,
        Ratio(0.5),
    ),
    row(
        "W1",
        "w1_micrograd",
        Peer("w1_micrograd", "CPython micrograd"),
        Seconds,
        Ratio(0.5),
    ),
    row(
        "W2",
        "w2_eager",
        Peer("w2_numpy", "numpy 16xf32"),
        Lower("us_per_op"),
        VsRecorded {
            bound: 0.25,
            recorded: 0.4745,
        },
    ),
    row(
        "W2",
        "w2_grad",
        Peer("w2_torch_grad", "torch requires_grad"),
        Lower("us_per_op"),
        VsRecorded {
            bound: 0.5,
            recorded: 2.512,
        },
    ),
    row(
        "W3",
        "w3_compiled",
        Peer("w3_jax_jit", "jax.jit"),
        Lower("ms"),
        VsRecorded {
            bound: 1.3,
            recorded: 1.275,
        },
    ),
    row(
        "W3",
        "w3_compiled",
        Peer("w3_torch_compile", "torch.compile"),
        Lower("ms"),
        Ratio(1.0),
    ),
    row(
        "W3",
        "w3_eager",
        Peer("w3_torch_eager", "torch eager"),
        Lower("ms"),
        Ratio(1.0),
    ),
    row(
        "W4",
        "w4_matmul_512",
        Peer("w4_torch_512", "torch n=512"),
        Higher("GFLOPs"),
        Ratio(0.9),
    ),
    row(
        "W4",
        "w4_matmul_1024",
        Peer("w4_torch_1024", "torch n=1024"),
        Higher("GFLOPs"),
        Ratio(0.9),
    ),
    row(
        "W5",
        "w5_compiled_sgd",
        Peer("w5_torch_compile_func_sgd", "torch.compile(func) sgd"),
        Higher("steps_per_s"),
        VsRecorded {
            bound: 2000.0,
            recorded: 1849.0,
        },
    ),
    row(
        "W5",
        "w5_compiled_adam",
        Peer("w5_torch_compile_func_adam", "torch.compile(func) adam"),
        Higher("steps_per_s"),
        VsRecorded {
            bound: 1200.0,
            recorded: 1134.8,
        },
    ),
    row(
        "W5",
        "w5_compiled_sgd",
        Alone,
        Lower("first_step_s"),
        Absolute(0.05),
    ),
    row(
        "W5",
        "w5_compiled_adam",
        Alone,
        Lower("first_step_s"),
        Absolute(0.05),
    ),
    row(
        "W5",
        "w5_eager_sgd",
        Peer("w5_torch_eager_sgd", "torch eager sgd"),
        Higher("steps_per_s"),
        Ratio(1.0),
    ),
    row(
        "W5",
        "w5_eager_adam",
        Peer("w5_torch_eager_adam", "torch eager adam"),
        Higher("steps_per_s"),
        Ratio(1.0),
    ),
    row(
        "W6",
        "w6_print",
        Peer("w6_python", "python3 -c pass"),
        Seconds,
        VsRecorded {
            bound: 0.005,
            recorded: 0.00832,
        },
    ),
    row(
        "W7",
        "w7_eager",
        Peer("w7_torch_eager", "torch eager"),
        Higher("seq_per_s"),
        VsRecorded {
            bound: 2500.0,
            recorded: 810.7,
        },
    ),
    row(
        "W7",
        "w7_compiled",
        Peer("w7_jax_jit_scan", "jax.jit lax.scan"),
        Higher("seq_per_s"),
        VsRecorded {
            bound: 10000.0,
            recorded: 10271.0,
        },
    ),
    row(
        "W8",
        "w8_compiled",
        Kiln("w8_eager"),
        Higher("steps_per_s"),
        Ratio(1.5),
    ),
    row(
        "W8",
        "w8_compiled",
        Peer("w8_torch_compile", "torch.compile"),
        Higher("steps_per_s"),
        Ratio(1.0),
    ),
    row(
        "W8",
        "w8_compiled",
        Peer("w8_jax_jit", "jax.jit"),
        Higher("steps_per_s"),
        Info,
    ),
    row(
        "W8",
        "w8_eager",
        Peer("w8_torch_eager", "torch eager"),
        Higher("steps_per_s"),
        Ratio(1.0),
    ),
    row(
        "W8",
        "w8_compiled",
        Alone,
        Lower("first_step_s"),
        Absolute(0.1),
    ),
    row(
        "W9",
        "w9_compiled",
        Kiln("w9_eager"),
        Higher("steps_per_s"),
        Ratio(1.5),
    ),
    row(
        "W9",
        "w9_compiled",
        Peer("w9_torch_compile", "torch.compile"),
        Higher("steps_per_s"),
        Ratio(1.0),
    ),
    row(
        "W9",
        "w9_compiled",
        Peer("w9_jax_jit", "jax.jit"),
        Higher("steps_per_s"),
        Info,
    ),
    row(
        "W9",
        "w9_eager",
        Peer("w9_torch_eager", "torch eager"),
        Higher("steps_per_s"),
        Ratio(1.0),
    ),
    row(
        "W10",
        "w10_compiled",
        Alone,
        Lower("compiles"),
        Absolute(2.0),
    ),
    row(
        "W10",
        "w10_compiled",
        Peer("w10_torch_eager", "torch eager"),
        Higher("tokens_per_s"),
        Ratio(1.0),
    ),
    row(
        "W10",
        "w10_compiled",
        Peer("w10_torch_compile", "torch.compile"),
        Higher("tokens_per_s"),
        Ratio(1.0),
    ),
    row(
        "W10",
        "w10_compiled",
        Peer("w10_jax_jit", "jax.jit"),
        Higher("tokens_per_s"),
        Ratio(1.0),
    ),
    row(
        "W10",
        "w10_compiled",
        Kiln("w10_eager"),
        Higher("tokens_per_s"),
        Info,
    ),
    row(
        "W10",
        "w10_eager",
        Peer("w10_torch_eager", "torch eager"),
        Higher("tokens_per_s"),
        Info,
    ),
];
