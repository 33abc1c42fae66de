//! What a cached captured version is: the parts of the guard key computed from a call's
//! arguments (tensor shapes/dtypes/requires_grad and aliasing, non-tensor values or
//! identities, grad mode), the compiled graph with its output structure (`GraphEntry`),
//! or why it runs eagerly. The interpreter's side (interp/capture/key.rs) computes keys
//! from Python values, checks the load guards and keeps the per-function cache.

use crate::compile::capture::effects::{resolve, Target};
use crate::compile::capture::trace::GraphBreak;
use crate::compile::capture::trace::{grad_state, GradState};
use crate::compile::runtime::lower::CompiledGraph;
use crate::tensor::dtype::DType;
use crate::tensor::shape::{fmt_shape, Dims};
use crate::tensor::Tensor;
use std::rc::Rc;

/// Most versions kept per function; past it calls run eagerly (logged once).
pub const CACHE_LIMIT: usize = 8;

/// One component of a guard key.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyPart {
    Tensor {
        dtype: DType,
        shape: Dims,
        requires_grad: bool,
        /// Row-major contiguous: `view` succeeds or raises by layout, so a version
        /// captured on one layout does not run the other.
        contiguous: bool,
        /// The index (among tensor parts) of the first argument tensor that is this
        /// very tensor (its own index when it is not an alias).
        alias: usize,
    },
    None,
    Bool(bool),
    Int(i64),
    /// By bits, so NaN keys equal themselves.
    Float(u64),
    Str(Rc<str>),
    /// A list, tuple or dict of `len` entries (its entries follow).
    Seq {
        kind: u8,
        len: usize,
    },
    /// An object by address (the entry keeps it alive so the address is not reused).
    Identity(usize),
    /// A keyword argument's name (its value follows).
    Kw(Rc<str>),
    GradMode(bool),
}

/// Why a key differs from a cached one, for the compile log.
pub fn key_change(old: &[KeyPart], new: &[KeyPart]) -> String {
    let diff = old.iter().zip(new.iter()).find(|(a, b)| a != b);
    match diff {
        Some((
            KeyPart::Tensor {
                shape: a,
                dtype: da,
                requires_grad: ra,
                contiguous: ca,
                ..
            },
            KeyPart::Tensor {
                shape: b,
                dtype: db,
                requires_grad: rb,
                contiguous: cb,
                ..
            },
        )) => {
            if a != b {
                format!("tensor shape {} -> {}", fmt_shape(a), fmt_shape(b))
            } else if da != db {
                format!("tensor dtype {da} -> {db}")
            } else if ra != rb {
                "requires_grad changed".into()
            } else if ca != cb {
                "tensor layout (contiguous) changed".into()
            } else {
                "argument aliasing changed".into()
            }
        }
        Some((KeyPart::GradMode(_), _)) => "grad mode changed".into(),
        Some(_) => "non-tensor argument changed".into(),
        None => "argument structure changed".into(),
    }
}

/// A captured version's output structure, rebuilt at each call.
#[derive(Debug, Clone)]
pub enum OutTemplate {
    /// The graph output at this index.
    Tensor(usize),
    /// A Python value computed at capture from guarded values (or a guarded object):
    /// the one at this index of its cache entry's `consts`.
    Const(usize),
    List(Vec<OutTemplate>),
    Tuple(Vec<OutTemplate>),
}

/// A version that replays its graph.
pub struct GraphEntry {
    /// The optimized graph with its fused kernels compiled.
    pub compiled: CompiledGraph,
    pub externals: Vec<Tensor>,
    /// (position in `externals`, leaf): those externals are read as the leaf's `.grad`.
    pub grad_of: Vec<(usize, Target)>,
    /// (argument slot, `.grad` state at capture): guards on the call's arguments.
    pub arg_grads: Vec<(usize, Option<GradState>)>,
    /// (position in `externals`, the guard of its place): runtime scalars, read from
    /// their place at each call into a fresh 0-d float64 tensor (`symfloat`).
    pub scalars: Vec<(usize, Box<dyn crate::compile::capture::trace::LoadGuard>)>,
    pub output: OutTemplate,
    /// In-place writes and `.grad` assignments applied after each run (a whole step).
    pub effects: Vec<crate::compile::capture::effects::Effect>,
    /// The compiled backward, when outputs need grad (compiled autograd).
    pub autodiff: Option<Box<crate::compile::autodiff::grad_node::AutoDiff>>,
    /// `requires_grad` of each external at capture (a flip recaptures).
    pub ext_grad: Vec<bool>,
}

impl GraphEntry {
    /// True when the `.grad` of each guarded argument (`arg(i)`: the call's argument
    /// tensor in slot i) is in its state at capture.
    pub fn arg_grads_hold<'a>(&self, arg: impl Fn(usize) -> Option<&'a Tensor>) -> bool {
        self.arg_grads
            .iter()
            .all(|(i, s)| arg(*i).map(grad_state).as_ref() == Some(s))
    }

    /// The external inputs' current tensors for a call with argument tensors `args`
    /// (None: a guarded `.grad` is gone).
    pub fn external_inputs(&self, args: &[Tensor]) -> Option<Vec<Tensor>> {
        let mut out = self.externals.clone();
        for (i, place) in &self.grad_of {
            *out.get_mut(*i)? = resolve(place, args)?.grad()?;
        }
        for (i, place) in &self.scalars {
            let f = place.read_float()?;
            *out.get_mut(*i)? = Tensor::from_vec(vec![f], &[]);
        }
        Some(out)
    }
}

/// Why a version runs eagerly.
#[derive(Debug, Clone)]
pub enum EagerReason {
    Breaks(Vec<GraphBreak>),
    /// An argument too deep or too long to key.
    ComplexArgs,
}

pub enum EntryKind {
    Graph(Box<GraphEntry>),
    Eager(EagerReason),
}

/// Counters a script reads with `compile_stats(f)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub captures: u64,
    pub hits: u64,
    pub fallbacks: u64,
    /// Fallback warnings printed (at most one per function).
    pub warnings: u64,
    /// Wall time of all captures (recording run, optimization, code generation), in
    /// microseconds.
    pub capture_us: u64,
}
