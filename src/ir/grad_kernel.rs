//! `GradKernel`: the gradients eager autograd computes with a dedicated kernel rather
//! than tensor ops (prod, convolution, pooling); as IR ops they run that same kernel, so
//! a capture records these backwards instead of breaking.

use crate::tensor::kernels::conv::{ConvParams, PoolParams};

/// One gradient kernel; its args are listed per variant (`IrOp::GradKernel`).
#[derive(Debug, Clone, PartialEq)]
pub enum GradKernel {
    /// For each element of `x` (arg 0): the product of the others over `dims`.
    ProdOthers { dims: Vec<usize> },
    /// conv2d's input gradient (args: x, w, g).
    Conv2dInput { params: ConvParams },
    /// conv2d's weight gradient (args: x, w, g).
    Conv2dWeight { params: ConvParams },
    /// max_pool2d's input gradient (args: x, g): each window's gradient to its maximum
    /// (the argmax is recomputed from x, as eager's forward found it).
    MaxPool2d { params: PoolParams },
    /// avg_pool2d's input gradient (arg: g) for an input of shape `in_shape`.
    AvgPool2d {
        params: PoolParams,
        in_shape: Box<[usize]>,
    },
    /// mean's gradient scale: arg 0 times `1/n`, `n` the product of its sizes over
    /// `dims` taken at run time (a mean over a symbolic dim), rounded as eager's rule.
    MeanScale { dims: Vec<usize> },
    /// batch_norm's input gradient, or its `[2, C]` weight and bias gradients (args:
    /// x, running mean and var unless `training`, the weight when `weight`, g); the
    /// statistics are recomputed from x (or read from the running ones) as the forward
    /// found them.
    BatchNorm {
        part: NormPart,
        training: bool,
        eps: f64,
        weight: bool,
    },
    /// layer_norm's input gradient, or its `[2, *normalized_shape]` weight and bias
    /// gradients, over the last `dims` dims (args: x, the weight when `weight`, g).
    LayerNorm {
        part: NormPart,
        dims: usize,
        eps: f64,
        weight: bool,
    },
    /// group_norm's input gradient, or its `[2, C]` weight and bias gradients, in
    /// `groups` groups of channels (args: x, the weight when `weight`, g).
    GroupNorm {
        part: NormPart,
        groups: usize,
        eps: f64,
        weight: bool,
    },
    /// scaled dot-product attention's gradient of q (`part` 0), k (1) or v (2) (args:
    /// q, k, v, the mask when `mask`, the forward's output, g); the three come from one
    /// backward kernel run (`tensor::attention_exec`).
    Attention {
        part: usize,
        causal: bool,
        scale: Option<f64>,
        mask: bool,
    },
    /// The fused LSTM layer's gradient of xp (`part` 0), h0 (1), c0 (2) or W_hh (3)
    /// (args: xp, h0, c0, W_hh, the forward's rows, g); the four come from one backward
    /// kernel run (`tensor::recurrence`).
    LstmLayer { part: usize },
    /// The fused GRU layer's gradient of xp (`part` 0), h0 (1), W_hh (2) or b_hh (3)
    /// (args: xp, h0, W_hh, b_hh when `bias`, the forward's output, g); all from one
    /// backward kernel run.
    GruLayer { part: usize, bias: bool },
}

/// Which gradients of a normalisation a `GradKernel` computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NormPart {
    /// The input's.
    Input,
    /// The weight's and the bias's, stacked.
    Params,
}

impl GradKernel {
    /// The op's name in dumps.
    pub fn name(&self) -> &'static str {
        match self {
            GradKernel::ProdOthers { .. } => "prod_backward",
            GradKernel::Conv2dInput { .. } => "conv2d_backward_input",
            GradKernel::Conv2dWeight { .. } => "conv2d_backward_weight",
            GradKernel::MaxPool2d { .. } => "max_pool2d_backward",
            GradKernel::AvgPool2d { .. } => "avg_pool2d_backward",
            GradKernel::MeanScale { .. } => "mean_backward_scale",
            GradKernel::BatchNorm { part, .. } => match part {
                NormPart::Input => "batch_norm_backward_input",
                NormPart::Params => "batch_norm_backward_params",
            },
            GradKernel::LayerNorm { part, .. } => match part {
                NormPart::Input => "layer_norm_backward_input",
                NormPart::Params => "layer_norm_backward_params",
            },
            GradKernel::GroupNorm { part, .. } => match part {
                NormPart::Input => "group_norm_backward_input",
                NormPart::Params => "group_norm_backward_params",
            },
            GradKernel::Attention { part, .. } => match part {
                0 => "attention_backward_q",
                1 => "attention_backward_k",
                _ => "attention_backward_v",
            },
            GradKernel::LstmLayer { part } => match part {
                0 => "lstm_layer_backward_input",
                1 => "lstm_layer_backward_h0",
                2 => "lstm_layer_backward_c0",
                _ => "lstm_layer_backward_weight_hh",
            },
            GradKernel::GruLayer { part, .. } => match part {
                0 => "gru_layer_backward_input",
                1 => "gru_layer_backward_h0",
                2 => "gru_layer_backward_weight_hh",
                _ => "gru_layer_backward_bias_hh",
            },
        }
    }

    /// How many args the node takes.
    pub fn arity(&self) -> usize {
        match self {
            GradKernel::ProdOthers { .. }
            | GradKernel::AvgPool2d { .. }
            | GradKernel::MeanScale { .. } => 1,
            GradKernel::MaxPool2d { .. } => 2,
            GradKernel::Conv2dInput { .. } | GradKernel::Conv2dWeight { .. } => 3,
            GradKernel::BatchNorm {
                training, weight, ..
            } => 2 + usize::from(*weight) + if *training { 0 } else { 2 },
            GradKernel::LayerNorm { weight, .. } | GradKernel::GroupNorm { weight, .. } => {
                2 + usize::from(*weight)
            }
            GradKernel::Attention { mask, .. } => 5 + usize::from(*mask),
            GradKernel::LstmLayer { .. } => 6,
            GradKernel::GruLayer { bias, .. } => 5 + usize::from(*bias),
        }
    }
}
