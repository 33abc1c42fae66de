//! Strided views of f32 or f64 buffers handed to kernels, and their bounds/layout checks.
//!
//! Every address a kernel can touch is checked here before native code runs: a wrong
//! stride or offset is an error, never an out-of-bounds access.

use crate::compile::jit::kernel::{Access, FloatType, Kernel};
use crate::error::{Error, ErrorKind, Result};
use smallvec::SmallVec;
use std::fmt::{self, Display};

/// The buffer of a kernel run a check is about, formatted only into an error message
/// (a run checks every buffer, so naming them must not allocate).
#[derive(Debug, Clone, Copy)]
pub enum Place {
    Input(usize),
    Output(usize),
    ReductionOutput,
}

impl Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Input(i) => write!(f, "input {i}"),
            Place::Output(i) => write!(f, "output {i}"),
            Place::ReductionOutput => write!(f, "reduction output"),
        }
    }
}

/// The element type of a kernel's buffers: f32 or f64 (a kernel runs only over views of
/// its own [`FloatType`]).
pub trait KernelElem: Copy + PartialEq + Send + Sync + std::fmt::Debug + 'static {
    const TYPE: FloatType;
    fn to_f64(self) -> f64;
    /// `v` rounded to this type.
    fn from_f64(v: f64) -> Self;
    /// NaN-propagating maximum and minimum (-0.0 < +0.0), as the kernels' `fmax`/`fmin`.
    fn max_nan(a: Self, b: Self) -> Self;
    fn min_nan(a: Self, b: Self) -> Self;
}

impl KernelElem for f32 {
    const TYPE: FloatType = FloatType::F32;
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn from_f64(v: f64) -> f32 {
        v as f32
    }
    fn max_nan(a: f32, b: f32) -> f32 {
        crate::tensor::kernels::binary::fmax_nan(a, b)
    }
    fn min_nan(a: f32, b: f32) -> f32 {
        crate::tensor::kernels::binary::fmin_nan(a, b)
    }
}

impl KernelElem for f64 {
    const TYPE: FloatType = FloatType::F64;
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(v: f64) -> f64 {
        v
    }
    fn max_nan(a: f64, b: f64) -> f64 {
        crate::tensor::kernels::binary::fmax_nan64(a, b)
    }
    fn min_nan(a: f64, b: f64) -> f64 {
        crate::tensor::kernels::binary::fmin_nan64(a, b)
    }
}

/// A read-only strided view: element `idx` is `data[offset + sum(idx[d] * strides[d])]`.
#[derive(Debug, Clone, Copy)]
pub struct BufView<'a, T: KernelElem = f32> {
    pub data: &'a [T],
    pub offset: usize,
    pub strides: &'a [isize],
}

/// A writable strided view (same addressing as [`BufView`]).
#[derive(Debug)]
pub struct BufViewMut<'a, T: KernelElem = f32> {
    pub data: &'a mut [T],
    pub offset: usize,
    pub strides: &'a [isize],
}

impl<'a, T: KernelElem> BufView<'a, T> {
    /// A contiguous row-major view of `data` with the given element strides.
    pub fn new(data: &'a [T], strides: &'a [isize]) -> BufView<'a, T> {
        BufView {
            data,
            offset: 0,
            strides,
        }
    }
}

impl<'a, T: KernelElem> BufViewMut<'a, T> {
    pub fn new(data: &'a mut [T], strides: &'a [isize]) -> BufViewMut<'a, T> {
        BufViewMut {
            data,
            offset: 0,
            strides,
        }
    }
}

fn value_error(message: String) -> Error {
    Error::new(ErrorKind::ValueError, message, None)
}

/// Checks that every index in `extents` maps inside a buffer of `len` elements.
pub fn check_bounds(
    what: impl Display,
    len: usize,
    offset: usize,
    strides: &[isize],
    extents: &[usize],
) -> Result<()> {
    if strides.len() != extents.len() {
        return Err(value_error(format!(
            "{what}: {} strides for {} dims",
            strides.len(),
            extents.len()
        )));
    }
    if extents.contains(&0) {
        return Ok(());
    }
    let (mut lo, mut hi) = (offset as i128, offset as i128);
    for (&s, &e) in strides.iter().zip(extents) {
        let span = (e as i128 - 1) * s as i128;
        if span < 0 {
            lo += span;
        } else {
            hi += span;
        }
    }
    if lo < 0 || hi >= len as i128 {
        return Err(value_error(format!(
            "{what}: strided view reaches elements {lo}..={hi} of a buffer of {len}"
        )));
    }
    Ok(())
}

/// Checks that no two indices of an output view share an element (a sufficient
/// condition: sorted by stride, each dim steps over everything the smaller dims span).
pub fn check_no_overlap(what: impl Display, strides: &[isize], extents: &[usize]) -> Result<()> {
    let mut dims: SmallVec<[(u128, u128); 8]> = strides
        .iter()
        .zip(extents)
        .filter(|(_, &e)| e > 1)
        .map(|(&s, &e)| (s.unsigned_abs() as u128, e as u128))
        .collect();
    dims.sort_unstable();
    let mut span = 1u128;
    for (s, e) in dims {
        if s < span {
            return Err(value_error(format!(
                "{what}: output strides make elements overlap"
            )));
        }
        span = s * e;
    }
    Ok(())
}

/// Checks the compile-time innermost access of a buffer against its actual stride.
pub fn check_access(
    what: impl Display,
    access: Access,
    strides: &[isize],
    extents: &[usize],
) -> Result<()> {
    let (Some(&s), Some(&e)) = (strides.last(), extents.last()) else {
        return Ok(());
    };
    let ok = e <= 1
        || match access {
            Access::Contiguous => s == 1,
            Access::Broadcast => s == 0,
            Access::Strided => true,
        };
    if ok {
        Ok(())
    } else {
        Err(value_error(format!(
            "{what}: innermost stride {s} does not match the kernel's {access:?} access"
        )))
    }
}

/// Validates every view of a run against the kernel (element type, counts, ranks,
/// bounds, layouts).
pub fn check_run<T: KernelElem>(
    kernel: &Kernel,
    inputs: &[BufView<T>],
    outputs: &[BufViewMut<T>],
    extents: &[usize],
) -> Result<()> {
    if T::TYPE != kernel.dtype {
        return Err(value_error(format!(
            "a {:?} kernel run over {:?} buffers",
            kernel.dtype,
            T::TYPE
        )));
    }
    if extents.len() != kernel.rank {
        return Err(value_error(format!(
            "kernel of rank {} run with {} extents",
            kernel.rank,
            extents.len()
        )));
    }
    if inputs.len() != kernel.inputs.len() || outputs.len() != kernel.output_buffers() {
        return Err(value_error(format!(
            "kernel takes {} inputs and {} outputs, got {} and {}",
            kernel.inputs.len(),
            kernel.output_buffers(),
            inputs.len(),
            outputs.len()
        )));
    }
    for (i, (view, &access)) in inputs.iter().zip(&kernel.inputs).enumerate() {
        let what = Place::Input(i);
        check_bounds(what, view.data.len(), view.offset, view.strides, extents)?;
        check_access(what, access, view.strides, extents)?;
    }
    for (i, (view, out)) in outputs.iter().zip(&kernel.outputs).enumerate() {
        let what = Place::Output(i);
        check_bounds(what, view.data.len(), view.offset, view.strides, extents)?;
        check_access(what, out.access, view.strides, extents)?;
        check_no_overlap(what, view.strides, extents)?;
    }
    if let Some(view) = outputs.get(kernel.outputs.len()) {
        let outer = &extents[..kernel.rank - kernel.reduced_dims()];
        let what = Place::ReductionOutput;
        check_bounds(what, view.data.len(), view.offset, view.strides, outer)?;
        check_no_overlap(what, view.strides, outer)?;
    }
    Ok(())
}
