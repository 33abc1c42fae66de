//! `GradKernel`: the gradients eager autograd computes with a dedicated kernel rather
//! than tensor ops (prod, convolution, pooling); as IR ops they run that same kernel, so
//! a capture records these backwards instead of breaking.

use crate::tensor::kernels::conv::{ConvParams, PoolParams};
use crate::tensor::shape::Dims;

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
    AvgPool2d { params: PoolParams, in_shape: Dims },
    /// mean's gradient scale: arg 0 times `1/n`, `n` the product of its sizes over
    /// `dims` taken at run time (a mean over a symbolic dim), rounded as eager's rule.
    MeanScale { dims: Vec<usize> },
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
        }
    }
}
