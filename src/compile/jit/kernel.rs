//! Kernel IR: one fused loop nest over f32 or f64 buffers (elementwise SSA body, optional
//! reduction).
//!
//! A [`Kernel`] describes a loop nest of rank `rank` whose extents are given at run time.
//! Every point of the index space evaluates `body` (an SSA list of scalar ops), stores the
//! values named by `outputs`, and optionally folds one value into a trailing reduction over
//! the innermost `dims` dimensions. The innermost dimension is the vectorized one.

use crate::error::{Error, ErrorKind, Result};

/// The most dimensions a kernel may have.
pub const MAX_RANK: usize = 8;
/// The most SSA ops a kernel body may have (bounds compile time).
pub const MAX_BODY: usize = 4096;

/// Elementwise unary float ops: the op table's enum (a kernel holds the `fusable` ones).
pub use crate::ops::UnaryOp;

/// Elementwise binary float ops and comparisons: the op table's enum (a kernel holds the
/// `fusable` ones; comparisons only in [`Op::Compare`], the others only in [`Op::Binary`]).
pub use crate::ops::BinaryOp;

/// The float type of a kernel: of every buffer it reads and writes and every value it
/// computes (a group is one dtype; casts between dtypes stay separate graph nodes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FloatType {
    /// f32 values, computed as f32x4.
    F32,
    /// f64 values, computed as f64x2; math functions call eager's float64 kernels.
    F64,
}

impl FloatType {
    /// Lanes of the kernel's 128-bit vectors.
    pub fn lanes(self) -> i64 {
        match self {
            FloatType::F32 => 4,
            FloatType::F64 => 2,
        }
    }

    /// log2 of the element size in bytes.
    pub fn shift(self) -> i64 {
        match self {
            FloatType::F32 => 2,
            FloatType::F64 => 3,
        }
    }
}

/// The trailing reduction's combining op (a mean is a `Sum` scaled by the caller).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum; an empty sum is 0.
    Sum,
    /// NaN-propagating maximum; an empty maximum is -inf.
    Max,
    /// NaN-propagating minimum; an empty minimum is +inf.
    Min,
}

/// The index of a value in a kernel body (the op that defines it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ValueId(pub u32);

impl ValueId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One SSA op of a kernel body.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    /// The element of input `n` at the current index.
    Load(usize),
    /// A constant (exact in either float type).
    Const(f32),
    /// An f64 constant: only in [`FloatType::F64`] kernels (an f32 kernel would round it).
    Const64(f64),
    Unary(UnaryOp, ValueId),
    /// An arithmetic op (`Add`, `Maximum`, `Pow`, ...).
    Binary(BinaryOp, ValueId, ValueId),
    /// A comparison (`Lt`, ..., `Ne`; `Ne` is true for NaN): produces a mask.
    Compare(BinaryOp, ValueId, ValueId),
    /// `Select(mask, a, b)`: `a` where the mask is true, else `b`.
    Select(ValueId, ValueId, ValueId),
}

/// How a buffer is addressed along the innermost dimension (a compile-time fact; `run`
/// checks it against the actual strides).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// Innermost stride is 1: vector loads/stores.
    Contiguous,
    /// Innermost stride is 0: one scalar load per row, splatted (inputs only).
    Broadcast,
    /// Any innermost stride: scalar gathers/scatters.
    Strided,
}

/// An output buffer of the full index space, written with `value` at every point
/// (a mask is stored as 1.0 / 0.0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Output {
    pub value: ValueId,
    pub access: Access,
}

/// A trailing reduction of `value` over the innermost `dims` dimensions into a buffer of
/// the outer shape (rank `rank - dims`). A mask is reduced as 1.0 / 0.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Reduction {
    pub op: ReduceOp,
    pub dims: usize,
    pub value: ValueId,
    /// max(dim)/min(dim) (one reduced dim): a zero result is the row's first zero, the
    /// value at its argmax/argmin as PyTorch returns (-0.0 or 0.0), not IEEE's choice.
    pub first: bool,
}

/// The type of an SSA value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    F32,
    F64,
    Mask,
}

/// One fused loop nest over buffers of `dtype`. Run-time buffers: `inputs.len()` inputs; `outputs.len()` outputs,
/// then the reduction's output if there is one.
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    pub rank: usize,
    pub dtype: FloatType,
    pub inputs: Vec<Access>,
    pub body: Vec<Op>,
    pub outputs: Vec<Output>,
    pub reduction: Option<Reduction>,
    /// The loop nest runs one element (a 0-d group: an optimizer's step-count and
    /// bias-correction arithmetic): only the one-element loop is generated, without the
    /// unrolled vector loops (a fraction of the code to compile; any extents still run,
    /// one element per iteration, each element's operations the same).
    pub tiny: bool,
}

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::ValueError, message, None)
}

impl Kernel {
    /// An empty f32 kernel of the given rank reading inputs addressed as `inputs`.
    pub fn new(rank: usize, inputs: Vec<Access>) -> Kernel {
        Kernel::typed(rank, inputs, FloatType::F32)
    }

    /// An empty kernel over `dtype` buffers (see [`Kernel::new`]).
    pub fn typed(rank: usize, inputs: Vec<Access>, dtype: FloatType) -> Kernel {
        Kernel {
            rank,
            dtype,
            inputs,
            body: Vec::new(),
            outputs: Vec::new(),
            reduction: None,
            tiny: false,
        }
    }

    /// Appends an op to the body and returns its value.
    pub fn push(&mut self, op: Op) -> ValueId {
        let id = ValueId(self.body.len() as u32);
        self.body.push(op);
        id
    }

    /// Number of reduced (innermost) dimensions; 0 without a reduction.
    pub fn reduced_dims(&self) -> usize {
        self.reduction.map_or(0, |r| r.dims)
    }

    /// Number of run-time output buffers (stored outputs plus the reduction's).
    pub fn output_buffers(&self) -> usize {
        self.outputs.len() + usize::from(self.reduction.is_some())
    }

    /// Checks the kernel is well formed and returns the kind of every body value.
    pub fn validate(&self) -> Result<Vec<Kind>> {
        if self.rank == 0 || self.rank > MAX_RANK {
            return Err(invalid(format!(
                "kernel rank must be in 1..={MAX_RANK}, got {}",
                self.rank
            )));
        }
        if self.body.len() > MAX_BODY {
            return Err(invalid(format!("kernel body has more than {MAX_BODY} ops")));
        }
        let mut kinds = Vec::with_capacity(self.body.len());
        for (i, op) in self.body.iter().enumerate() {
            kinds.push(self.op_kind(i, op, &kinds)?);
        }
        for out in &self.outputs {
            value_kind(&kinds, out.value, "output")?;
            if out.access == Access::Broadcast {
                return Err(invalid("an output cannot be broadcast".into()));
            }
        }
        if let Some(red) = self.reduction {
            value_kind(&kinds, red.value, "reduction")?;
            if red.dims == 0 || red.dims > self.rank {
                return Err(invalid(format!(
                    "reduction over {} dims of a rank-{} kernel",
                    red.dims, self.rank
                )));
            }
            if red.first && (red.dims != 1 || red.op == ReduceOp::Sum) {
                return Err(invalid(
                    "a first-zero reduction is a max/min over one dim".into(),
                ));
            }
        }
        if self.outputs.is_empty() && self.reduction.is_none() {
            return Err(invalid("kernel has no output".into()));
        }
        Ok(kinds)
    }

    /// The kind of the kernel's numbers.
    pub fn float_kind(&self) -> Kind {
        match self.dtype {
            FloatType::F32 => Kind::F32,
            FloatType::F64 => Kind::F64,
        }
    }

    fn op_kind(&self, at: usize, op: &Op, kinds: &[Kind]) -> Result<Kind> {
        let number = self.float_kind();
        let float = |v: ValueId| -> Result<()> {
            if v.index() >= at {
                return Err(invalid(format!("op {at} uses a later value {}", v.0)));
            }
            match value_kind(kinds, v, "operand")? {
                Kind::Mask => Err(invalid(format!("op {at} uses a mask as a number"))),
                k if k == number => Ok(()),
                _ => Err(invalid(format!("op {at} mixes float types"))),
            }
        };
        let number_of = |r: Result<()>| r.map(|_| number);
        match *op {
            Op::Load(n) if n >= self.inputs.len() => {
                Err(invalid(format!("op {at} loads missing input {n}")))
            }
            Op::Const64(_) if self.dtype == FloatType::F32 => Err(invalid(format!(
                "op {at}: an f64 constant in an f32 kernel"
            ))),
            Op::Load(_) | Op::Const(_) | Op::Const64(_) => Ok(number),
            Op::Unary(u, _) if !u.fusable() => Err(invalid(format!(
                "op {at}: {} cannot be computed in a fused kernel",
                u.name()
            ))),
            Op::Unary(_, a) => number_of(float(a)),
            Op::Binary(op, ..) | Op::Compare(op, ..) if !op.fusable() => Err(invalid(format!(
                "op {at}: {} cannot be computed in a fused kernel",
                op.name()
            ))),
            Op::Binary(op, ..) if op.is_comparison() => Err(invalid(format!(
                "op {at}: the comparison {} must be an Op::Compare",
                op.name()
            ))),
            Op::Compare(op, ..) if !op.is_comparison() => Err(invalid(format!(
                "op {at}: {} is not a comparison",
                op.name()
            ))),
            Op::Binary(_, a, b) => number_of(float(a).and(float(b))),
            Op::Compare(_, a, b) => float(a).and(float(b)).map(|_| Kind::Mask),
            Op::Select(m, a, b) => {
                if m.index() >= at || value_kind(kinds, m, "mask")? != Kind::Mask {
                    return Err(invalid(format!("op {at} selects on a non-mask value")));
                }
                number_of(float(a).and(float(b)))
            }
        }
    }
}

fn value_kind(kinds: &[Kind], v: ValueId, what: &str) -> Result<Kind> {
    kinds
        .get(v.index())
        .copied()
        .ok_or_else(|| invalid(format!("{what} refers to undefined value {}", v.0)))
}
