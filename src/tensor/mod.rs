//! The `Tensor` handle: a cheap-to-clone Rc to storage + shape + strides + offset +
//! autograd metadata. Submodules hold creation, views, indexing, reductions, printing
//! and the kernels; elementwise ops and their autograd recording live in `pointwise`.

pub mod attention_exec;
pub mod cancel;
pub mod convert;
pub mod creation;
pub mod dtype;
pub mod format;
pub mod group_norm;
pub mod hooks;
pub mod indexing;
pub mod inplace;
pub mod kernels;
pub mod linalg;
pub mod linalg_decomp;
pub mod linalg_grad;
pub mod linalg_ops;
mod linalg_stack;
pub mod mt19937;
pub mod norm;
pub mod optim_step;
pub mod parts_memo;
pub mod pointwise;
pub mod pool;
pub mod random;
pub mod recurrence;
pub mod reduce;
pub mod seq;
pub mod shape;
pub mod sort_keys;
pub mod sorting;
pub mod storage;
pub mod torch_mathfun;
pub mod view_grad;
pub mod views;

use crate::autograd::Node;
use crate::error::{Error, ErrorKind, Result};
pub use dtype::{DType, Elem, Scalar};
use shape::Dims;
use std::cell::{Cell, Ref, RefCell, RefMut};
use std::rc::Rc;
pub use storage::{Buffer, Storage};

/// A tensor handle. Cloning it is an Rc increment; both handles are the same tensor.
#[derive(Clone)]
pub struct Tensor(Rc<TensorImpl>);

pub struct TensorImpl {
    storage: Rc<Storage>,
    dtype: DType,
    shape: Dims,
    strides: Dims,
    offset: usize,
    requires_grad: Cell<bool>,
    grad: RefCell<Option<Tensor>>,
    grad_fn: RefCell<Option<Rc<Node>>>,
    /// Marked by `Parameter(t)` (what `nn` modules collect).
    param: Cell<bool>,
    /// Set on views: their base, for autograd of in-place ops (view_grad.rs).
    view: std::cell::OnceCell<view_grad::ViewInfo>,
    /// `register_hook` / `retain_grad` (hooks.rs); None for almost every tensor.
    hooks: RefCell<Option<Box<hooks::GradHooks>>>,
}

/// `rc_in_place!(Type { field: value, ... })`: an `Rc<Type>` whose fields are written
/// straight into the allocation. `Rc::new(Type { .. })` assembles the value, then the
/// counted box, on the stack and copies both: two copies of the large records made per
/// op (a tensor, an autograd node). Every field must be listed (checked at compile time
/// by an exhaustive pattern), so the value is fully initialised.
macro_rules! rc_in_place {
    ($ty:ident { $($f:ident: $e:expr),* $(,)? }) => {{
        // Each value is made at its write, so it can be built in place.
        $(let $f = move || $e;)*
        let _every_field = |v: &$ty| {
            let $ty { $($f: _),* } = v;
        };
        let slot = std::rc::Rc::new(std::mem::MaybeUninit::<$ty>::uninit());
        let p = std::rc::Rc::as_ptr(&slot).cast_mut().cast::<$ty>();
        // SAFETY: `slot` is a fresh allocation nothing else sees; `p` comes from its raw
        // pointer (no reference is alive), and every field is written once before
        // `assume_init` (the pattern above fails to compile if one is missing).
        unsafe {
            $(std::ptr::addr_of_mut!((*p).$f).write($f());)*
            slot.assume_init()
        }
    }};
}
pub(crate) use rc_in_place;

/// An error of `kind` with no span (the interpreter attaches the call's span).
pub(crate) fn err(kind: ErrorKind, msg: impl Into<String>) -> Error {
    Error::new(kind, msg, None)
}

impl Tensor {
    /// A tensor over `storage` with explicit layout. The caller guarantees the layout
    /// stays inside the storage.
    pub(crate) fn from_parts(
        storage: Rc<Storage>,
        shape: Dims,
        strides: Dims,
        offset: usize,
    ) -> Tensor {
        let dtype = storage.dtype();
        Tensor(rc_in_place!(TensorImpl {
            storage: storage,
            dtype: dtype,
            shape: shape,
            strides: strides,
            offset: offset,
            requires_grad: Cell::new(false),
            grad: RefCell::new(None),
            grad_fn: RefCell::new(None),
            param: Cell::new(false),
            view: std::cell::OnceCell::new(),
            hooks: RefCell::new(None),
        }))
    }

    /// A contiguous tensor owning `data` (whose length is the product of `shape`).
    pub(crate) fn from_vec<T: Elem>(data: Vec<T>, shape: &[usize]) -> Tensor {
        let strides = shape::contiguous_strides(shape);
        Tensor::from_parts(
            Rc::new(Storage::new(T::wrap(data))),
            Dims::from_slice(shape),
            strides,
            0,
        )
    }

    /// Build a tensor from a flat buffer and a shape (the interpreter's `tensor(data)`);
    /// the `Vec` becomes the tensor's storage, without a copy.
    ///
    /// ```
    /// use kiln::{Buffer, DType, Tensor};
    /// let t = Tensor::from_buffer(Buffer::F32(vec![1.0, 2.0, 3.0, 4.0]), &[2, 2]).unwrap();
    /// assert_eq!((t.shape(), t.dtype()), (&[2, 2][..], DType::F32));
    /// assert!(Tensor::from_buffer(Buffer::I64(vec![1, 2, 3]), &[2, 2]).is_err());
    /// ```
    pub fn from_buffer(buf: Buffer, shape: &[usize]) -> Result<Tensor> {
        let n = shape::numel(shape)?;
        if buf.len() != n {
            return Err(err(
                ErrorKind::ShapeError,
                format!(
                    "tensor: {} elements cannot fill shape {}",
                    buf.len(),
                    shape::fmt_shape(shape)
                ),
            ));
        }
        let strides = shape::contiguous_strides(shape);
        Ok(Tensor::from_parts(
            Rc::new(Storage::new(buf)),
            Dims::from_slice(shape),
            strides,
            0,
        ))
    }

    /// A 0-d tensor holding `s`.
    pub fn scalar(s: Scalar) -> Tensor {
        let sc = crate::ir::record::scope();
        let out = match s {
            Scalar::Bool(b) => Tensor::from_vec(vec![b], &[]),
            Scalar::Int(i) => Tensor::from_vec(vec![i], &[]),
            Scalar::Float(f) => Tensor::from_vec(vec![f as f32], &[]),
        };
        sc.record_const(&out);
        out
    }

    pub fn shape(&self) -> &[usize] {
        &self.0.shape
    }

    pub fn strides(&self) -> &[usize] {
        &self.0.strides
    }

    pub fn offset(&self) -> usize {
        self.0.offset
    }

    pub fn ndim(&self) -> usize {
        self.0.shape.len()
    }

    pub fn dtype(&self) -> DType {
        self.0.dtype
    }

    pub fn numel(&self) -> usize {
        self.0.shape.iter().product()
    }

    /// `size(dim)` with a negative dim allowed.
    pub fn size(&self, dim: i64) -> Result<usize> {
        let d = shape::norm_dim("size", dim, self.ndim())?;
        Ok(self.0.shape.get(d).copied().unwrap_or(1))
    }

    pub fn storage(&self) -> &Rc<Storage> {
        &self.0.storage
    }

    pub fn is_contiguous(&self) -> bool {
        shape::is_contiguous(&self.0.shape, &self.0.strides)
    }

    /// True when this handle is the only one to the tensor and nothing else (no view,
    /// no other tensor) shares its storage: its buffer may then be overwritten.
    pub fn is_unique(&self) -> bool {
        Rc::strong_count(&self.0) == 1 && Rc::strong_count(&self.0.storage) == 1
    }

    /// Its elements are its whole storage in order (not a view into a larger buffer).
    pub fn is_whole(&self) -> bool {
        self.offset() == 0 && self.is_contiguous() && self.storage().borrow().len() == self.numel()
    }

    /// [`is_unique`](Self::is_unique) and [`is_whole`](Self::is_whole).
    pub fn is_whole_unique(&self) -> bool {
        self.is_unique() && self.is_whole()
    }

    /// The elements of a contiguous f32 tensor, in order; None for another dtype or
    /// layout, or while its buffer is being written.
    pub fn f32_elems(&self) -> Option<Ref<'_, [f32]>> {
        if self.dtype() != DType::F32 || !self.is_contiguous() {
            return None;
        }
        let range = self.offset()..self.offset() + self.numel();
        Ref::filter_map(self.storage().try_borrow()?, |b| match b {
            Buffer::F32(v) => v.get(range),
            _ => None,
        })
        .ok()
    }

    /// [`f32_elems`](Self::f32_elems) for writing (bumps the storage's version); None
    /// also while the buffer is borrowed.
    pub fn f32_elems_mut(&self) -> Option<RefMut<'_, [f32]>> {
        if self.dtype() != DType::F32 || !self.is_contiguous() {
            return None;
        }
        let range = self.offset()..self.offset() + self.numel();
        RefMut::filter_map(self.storage().try_borrow_mut()?, |b| match b {
            Buffer::F32(v) => v.get_mut(range),
            _ => None,
        })
        .ok()
    }

    /// How many handles refer to this tensor object (views are other objects).
    pub fn handle_count(&self) -> usize {
        Rc::strong_count(&self.0)
    }

    /// True when both handles are the same tensor object.
    pub fn same(&self, other: &Tensor) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }

    /// The address of the tensor object (identity for `id()`, `is` and hashing).
    pub fn id(&self) -> usize {
        Rc::as_ptr(&self.0) as usize
    }

    /// True for tensors made by `Parameter(t)`.
    pub fn is_parameter(&self) -> bool {
        self.0.param.get()
    }

    /// Mark this tensor as a parameter (`Parameter(t)`).
    pub fn mark_parameter(&self) {
        self.0.param.set(true);
    }

    /// True when the two tensors share storage (views of one another).
    pub fn shares_storage(&self, other: &Tensor) -> bool {
        Rc::ptr_eq(&self.0.storage, &other.0.storage)
    }

    /// The storage version counter (bumped by every in-place write).
    pub fn version(&self) -> u64 {
        self.0.storage.version()
    }

    // ----- autograd metadata -----

    pub fn requires_grad(&self) -> bool {
        if self.0.view.get().is_some() {
            self.refresh_view_history();
        }
        self.0.requires_grad.get()
    }

    /// `x.requires_grad_(flag)`: only leaves may change it; only float tensors may
    /// require grad.
    pub fn set_requires_grad(&self, flag: bool) -> Result<()> {
        crate::ir::record::graph_break(crate::ir::record::BreakReason::InPlace("requires_grad_"));
        crate::ir::record::refuse_effect("requires_grad_")?;
        if flag && !self.dtype().is_float() {
            return Err(err(
                ErrorKind::RuntimeError,
                "only tensors of floating point dtype can require gradients",
            ));
        }
        if !flag && self.grad_fn().is_some() {
            return Err(err(
                ErrorKind::RuntimeError,
                "you can only change requires_grad flags of leaf variables",
            ));
        }
        self.0.requires_grad.set(flag);
        Ok(())
    }

    pub fn is_leaf(&self) -> bool {
        if self.0.view.get().is_some() {
            self.refresh_view_history();
        }
        self.0.grad_fn.borrow().is_none()
    }

    pub fn grad(&self) -> Option<Tensor> {
        self.0.grad.borrow().clone()
    }

    /// Set or clear `.grad` (`x.grad = None`).
    pub fn set_grad(&self, g: Option<Tensor>) {
        crate::ir::record::note_set_grad(self, g.as_ref());
        *self.0.grad.borrow_mut() = g;
    }

    pub fn grad_fn(&self) -> Option<Rc<Node>> {
        if self.0.view.get().is_some() {
            self.refresh_view_history();
        }
        self.0.grad_fn.borrow().clone()
    }

    /// Attach the node that produced this tensor (marks it requiring grad).
    pub(crate) fn set_grad_fn(&self, node: Option<Rc<Node>>) {
        if let Some(n) = &node {
            n.note_output(self.dtype());
        }
        self.0
            .requires_grad
            .set(node.is_some() || self.0.requires_grad.get());
        *self.0.grad_fn.borrow_mut() = node;
    }

    /// A new handle on the same data, with no autograd history (`detach`).
    pub fn detach(&self) -> Tensor {
        Tensor::from_parts(
            self.0.storage.clone(),
            self.0.shape.clone(),
            self.0.strides.clone(),
            self.0.offset,
        )
    }

    /// `detach()` as a captured op: in a `@compile` capture the result reads as this
    /// tensor's graph value (no gradient flows through it: eager's rules record none).
    pub fn detached(&self) -> Tensor {
        let d = self.detach();
        crate::ir::record::note_alias(&d, self);
        d
    }

    /// `detach_()`: this tensor drops its autograd history and becomes a leaf that does
    /// not require grad (views refuse, as torch's).
    pub fn detach_in_place(&self) -> Result<()> {
        if self.0.view.get().is_some() {
            return Err(err(
                ErrorKind::RuntimeError,
                "Can't detach views in-place. Use detach() instead.",
            ));
        }
        *self.0.grad_fn.borrow_mut() = None;
        self.0.requires_grad.set(false);
        Ok(())
    }

    /// A view with a new layout over the same storage, no autograd history.
    pub(crate) fn view_with(&self, shape: Dims, strides: Dims, offset: usize) -> Tensor {
        Tensor::from_parts(self.0.storage.clone(), shape, strides, offset)
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format::format_tensor(self))
    }
}

impl std::fmt::Display for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format::format_tensor(self))
    }
}
