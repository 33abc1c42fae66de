//! Compute kernels: strided iteration, elementwise maps, reductions, matmul (gemm),
//! convolution/pooling, and index gathering/scattering.

pub mod attention;
pub mod binary;
pub mod conv;
pub mod elementwise;
pub mod fastmath;
pub mod group_norm;
pub mod index;
pub mod matmul;
pub mod norm;
pub mod pool2d;
pub mod recurrent;
pub mod reduce;
mod row_groups;
pub mod simd;
pub mod special;
mod step_gemm;
pub mod strided;
pub mod team;
pub mod unary;

/// Element count above which elementwise and reduction kernels split across threads.
pub const PAR_THRESHOLD: usize = 32 * 1024;
