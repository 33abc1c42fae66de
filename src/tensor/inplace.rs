//! In-place ops (`add_ sub_ mul_ div_ clamp_ fill_ zero_ copy_`, augmented assignment):
//! write into the tensor's storage (bumping its version). Under grad mode a non-leaf
//! gets its history rebased onto the new value; a leaf requiring grad is refused.

use super::dtype::{with_elem, DType, Scalar};
use super::kernels::binary::{binary_raw, binary_scalar_raw};
use super::kernels::elementwise::assign;
use super::pointwise as ops;
use super::shape::fmt_shape;
use super::{err, Tensor};
use crate::autograd;
use crate::error::{ErrorKind, Result};
use crate::ir::record as trace;
use crate::ir::IrOp;
use crate::optable::BinaryOp;

/// The right-hand side of an in-place op.
#[derive(Clone, Copy)]
pub enum Operand<'a> {
    Tensor(&'a Tensor),
    Scalar(Scalar),
}

impl Tensor {
    /// Overwrite this tensor's elements with `r` (same shape), cast to this dtype.
    fn write_from(&self, op: &str, r: &Tensor) -> Result<()> {
        if r.shape() != self.shape() {
            return Err(err(
                ErrorKind::ShapeError,
                format!(
                    "{op}: output with shape {} doesn't match the broadcast shape {}",
                    fmt_shape(self.shape()),
                    fmt_shape(r.shape())
                ),
            ));
        }
        if r.dtype().is_float() && !self.dtype().is_float() {
            return Err(err(
                ErrorKind::TypeError,
                format!(
                    "{op}: result type {} can't be cast to the desired output type {}",
                    r.dtype(),
                    self.dtype()
                ),
            ));
        }
        let r = r.cast(self.dtype())?;
        with_elem!(self.dtype(), T => assign(self, &r.to_vec::<T>()?))
    }

    /// Run `f` on a differentiable copy when grad is needed, then write and rebase.
    fn inplace_with(
        &self,
        op: &str,
        other: Option<&Tensor>,
        f: impl Fn(&Tensor, bool) -> Result<Tensor>,
    ) -> Result<()> {
        let grad = match other {
            Some(o) => autograd::needs_grad(&[self, o]),
            None => autograd::needs_grad(&[self]),
        };
        if !grad {
            let r = f(self, false)?;
            return self.write_from(op, &r);
        }
        self.check_inplace()?;
        let base = ops::clone(self)?;
        let r = f(&base, true)?;
        self.write_from(op, &r)?;
        self.rebase_history(r.grad_fn())
    }

    /// `x op= rhs` in place (`add_`, `sub_`, `mul_`, `div_`, ...).
    pub fn binary_(&self, op: BinaryOp, rhs: Operand) -> Result<()> {
        crate::ir::record::refuse_effect("an in-place op")?;
        let name = op.name();
        let direct = match rhs {
            Operand::Tensor(t) => !autograd::needs_grad(&[self, t]),
            Operand::Scalar(_) => !autograd::needs_grad(&[self]),
        } && self.binary_direct(op, rhs)?;
        if !direct {
            let _inner = trace::scope();
            match rhs {
                Operand::Tensor(t) => self.inplace_with(name, Some(t), |x, g| {
                    if g {
                        ops::binary(op, x, t)
                    } else {
                        binary_raw(op, x, t)
                    }
                }),
                Operand::Scalar(s) => self.inplace_with(name, None, |x, g| {
                    if g {
                        ops::binary_scalar(op, x, s, false)
                    } else {
                        binary_scalar_raw(op, x, s, false)
                    }
                }),
            }?;
        }
        match rhs {
            Operand::Tensor(t) => {
                trace::record_inplace(IrOp::Binary(op), &[self, t], self, "binary_")
            }
            Operand::Scalar(s) => {
                let ir = IrOp::BinaryScalar {
                    op,
                    scalar: s,
                    reverse: false,
                };
                trace::record_inplace(ir, &[self], self, "binary_")
            }
        }
        Ok(())
    }

    /// `self op= rhs` for f32 `+ - * /` computed straight into this tensor's buffer
    /// (no temporary, the same f32 operation per element): this tensor contiguous, the
    /// operand a number or a contiguous f32 tensor of the same shape in another storage
    /// (a view of this one could overlap what is being written). False (nothing
    /// written) otherwise.
    fn binary_direct(&self, op: BinaryOp, rhs: Operand) -> Result<bool> {
        let arith = matches!(
            op,
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div
        );
        if !arith || self.dtype() != DType::F32 || !self.is_contiguous() {
            return Ok(false);
        }
        let t = match rhs {
            Operand::Scalar(s) => {
                return Ok(self.update_direct(op, None, <f32 as super::Elem>::from_scalar(s)))
            }
            Operand::Tensor(t) => t,
        };
        if t.shape() != self.shape() || std::rc::Rc::ptr_eq(t.storage(), self.storage()) {
            return Ok(false);
        }
        let Some(s) = t.f32_elems() else {
            return Ok(false);
        };
        Ok(self.update_direct(op, Some(&s), 0.0))
    }

    /// `self[i] = self[i] op s[i]` (or `op y`) in this contiguous f32 tensor's buffer;
    /// false (nothing written) when the buffer is borrowed.
    fn update_direct(&self, op: BinaryOp, s: Option<&[f32]>, y: f32) -> bool {
        use super::kernels::elementwise::update;
        let Some(mut d) = self.f32_elems_mut() else {
            return false;
        };
        let d = &mut *d;
        match op {
            BinaryOp::Add => update(d, s, y, |x, v| x + v),
            BinaryOp::Sub => update(d, s, y, |x, v| x - v),
            BinaryOp::Mul => update(d, s, y, |x, v| x * v),
            _ => update(d, s, y, |x, v| x / v),
        }
        true
    }

    pub fn add_(&self, rhs: Operand) -> Result<()> {
        self.binary_(BinaryOp::Add, rhs)
    }

    pub fn sub_(&self, rhs: Operand) -> Result<()> {
        self.binary_(BinaryOp::Sub, rhs)
    }

    pub fn mul_(&self, rhs: Operand) -> Result<()> {
        self.binary_(BinaryOp::Mul, rhs)
    }

    pub fn div_(&self, rhs: Operand) -> Result<()> {
        self.binary_(BinaryOp::Div, rhs)
    }

    /// `clamp_(min, max)`.
    pub fn clamp_(&self, min: Option<f64>, max: Option<f64>) -> Result<()> {
        crate::ir::record::refuse_effect("an in-place op")?;
        {
            let _inner = trace::scope();
            self.inplace_with("clamp_", None, |x, _| ops::clamp(x, min, max))?;
        }
        trace::record_inplace(IrOp::Clamp { min, max }, &[self], self, "clamp_");
        Ok(())
    }

    /// `fill_(value)`.
    pub fn fill_(&self, s: Scalar) -> Result<()> {
        crate::ir::record::refuse_effect("an in-place op")?;
        {
            let _inner = trace::scope();
            self.index_put_scalar_(&[], s)?;
        }
        // the value of this tensor's (possibly symbolic) shape
        let op = IrOp::FillLike {
            fill: super::creation::Fill::Value(s),
            dtype: self.dtype(),
        };
        trace::record_inplace(op, &[self], self, "fill_");
        Ok(())
    }

    /// `zero_()`.
    pub fn zero_(&self) -> Result<()> {
        self.fill_(Scalar::Int(0))
    }

    /// `copy_(src)`: src broadcast to this shape and cast to this dtype.
    pub fn copy_(&self, src: &Tensor) -> Result<()> {
        crate::ir::record::refuse_effect("an in-place op")?;
        {
            let _inner = trace::scope();
            self.index_put_(&[], src)?;
        }
        if src.shape() == self.shape() && src.dtype() == self.dtype() {
            trace::record_inplace(IrOp::Clone, &[src], self, "copy_");
        } else {
            trace::graph_break(trace::BreakReason::InPlace(
                "copy_ with a broadcast or cast",
            ));
        }
        Ok(())
    }

    /// `self += g` into this tensor's own buffer when no other handle or view can see
    /// it (a gradient sum the autograd engine owns): both f32, same shape, contiguous.
    /// False (nothing written) otherwise; the caller then adds into a new tensor.
    pub(crate) fn add_into_unique(&self, g: &Tensor) -> Result<bool> {
        if self.shape() != g.shape() || !self.is_whole_unique() {
            return Ok(false);
        }
        // Both f32 and contiguous, or None.
        let (Some(mut d), Some(s)) = (self.f32_elems_mut(), g.f32_elems()) else {
            return Ok(false);
        };
        super::kernels::elementwise::update(&mut d, Some(&s), 0.0, |x, v| x + v);
        Ok(true)
    }

    /// Overwrites this tensor's elements with `r` (same shape; a compiled step's
    /// in-place write applied after its graph ran).
    pub(crate) fn overwrite(&self, r: &Tensor) -> Result<()> {
        self.write_from("compiled in-place write", r)
    }
}
