//! Autograd of views under in-place ops, as PyTorch: every view remembers its base (the
//! tensor that owns the layout it was cut from). An in-place op on a view rebases the
//! base's history onto a `CopySlices` node (the modified region's gradient goes through
//! the op, the rest passes through unchanged), and a view whose base's history changed
//! since its own was recorded reads the base's new history (`AsStridedBackward`). The
//! version counter is the storage's, so base and views already share it.

use super::kernels::index::{put, take, view_offsets, Targets};
use super::kernels::strided::for_each_offset;
use super::shape::Dims;
use super::{creation, err, Tensor};
use crate::autograd::{self, BackwardOp, Edge, Edges, Node};
use crate::error::{ErrorKind, Result};
use std::cell::Cell;
use std::rc::Rc;

/// What a view knows of where it came from.
pub(crate) struct ViewInfo {
    /// The base: never itself a view.
    base: Tensor,
    /// The id of the base's node when this view's history was last derived from it
    /// (`NO_NODE` for none): a different id means the base was modified in place.
    base_fn: Cell<u64>,
    /// Made with grad mode on (a view made under `no_grad` keeps no history).
    grad_mode: bool,
}

const NO_NODE: u64 = u64::MAX;

fn node_id(n: Option<&Rc<Node>>) -> u64 {
    n.map_or(NO_NODE, |n| n.id)
}

/// How the elements of a view sit in its base: the base's row-major position of each
/// view element, in the view's row-major order.
#[derive(Clone)]
pub struct ViewMap {
    base_shape: Dims,
    view_shape: Dims,
    positions: Rc<[usize]>,
}

impl ViewMap {
    fn of(base: &Tensor, view: &Tensor) -> Result<ViewMap> {
        let outside = || {
            err(
                ErrorKind::RuntimeError,
                "internal: a view reaches outside its base",
            )
        };
        let offsets = view_offsets(view);
        let positions = if base.is_contiguous() {
            // Row-major: an element's position is its distance from the base's start.
            let (start, n) = (base.offset(), base.numel());
            offsets
                .into_iter()
                .map(|o| o.checked_sub(start).filter(|&p| p < n).ok_or_else(outside))
                .collect::<Result<Rc<[usize]>>>()?
        } else {
            let len = base.storage().borrow().len();
            let mut at = vec![usize::MAX; len];
            let mut i = 0usize;
            for_each_offset(base.shape(), base.strides(), base.offset(), |o| {
                if let Some(slot) = at.get_mut(o) {
                    if *slot == usize::MAX {
                        *slot = i;
                    }
                }
                i += 1;
            });
            offsets
                .into_iter()
                .map(|o| {
                    at.get(o)
                        .copied()
                        .filter(|&p| p != usize::MAX)
                        .ok_or_else(outside)
                })
                .collect::<Result<Rc<[usize]>>>()?
        };
        Ok(ViewMap {
            base_shape: base.shape().into(),
            view_shape: view.shape().into(),
            positions,
        })
    }

    /// `g` when it has `shape` (a gradient the engine passes this node), else an error
    /// rather than an out-of-range read.
    fn expect<'a>(g: &'a Tensor, shape: &[usize]) -> Result<&'a Tensor> {
        if g.shape() == shape {
            return Ok(g);
        }
        Err(err(
            ErrorKind::RuntimeError,
            format!(
                "internal: a view's gradient of shape {} where {} was expected",
                super::shape::fmt_shape(g.shape()),
                super::shape::fmt_shape(shape)
            ),
        ))
    }

    /// `AsStridedBackward`: a view's gradient placed into zeros of the base's shape.
    pub(crate) fn scatter(&self, g: &Tensor) -> Result<Tensor> {
        let g = Self::expect(g, &self.view_shape)?;
        let dt = crate::tensor::dtype::float_for(g.dtype());
        let out = creation::zeros(&self.base_shape, dt)?;
        put(&out, Targets::Offsets(&self.positions), &g.cast(dt)?, true)?;
        Ok(out)
    }

    /// `CopySlices`: the base's gradient `g` splits into the gradient of the base's old
    /// value (zero over the overwritten region) and of the new region's values.
    pub(crate) fn split(&self, g: &Tensor) -> Result<(Tensor, Tensor)> {
        let rest = Self::expect(g, &self.base_shape)?.contiguous_copy()?;
        let region = take(&rest, &self.positions, &self.view_shape)?;
        let zero = creation::zeros(&[self.positions.len()], rest.dtype())?;
        put(&rest, Targets::Offsets(&self.positions), &zero, false)?;
        Ok((rest, region))
    }
}

impl Tensor {
    /// Records that `self` is a view cut from `parent` (a view of a view shares the
    /// first one's base).
    pub(crate) fn mark_view_of(&self, parent: &Tensor) {
        let base = match parent.0.view.get() {
            Some(v) => v.base.clone(),
            None => parent.clone(),
        };
        let base_fn = node_id(base.0.grad_fn.borrow().as_ref());
        let _ = self.0.view.set(ViewInfo {
            base,
            base_fn: Cell::new(base_fn),
            grad_mode: autograd::is_grad_enabled(),
        });
    }

    /// For a view whose base was modified in place with autograd since the view's
    /// history was recorded: the view's history becomes a view of the base's new one.
    pub(super) fn refresh_view_history(&self) {
        let Some(v) = self.0.view.get() else {
            return;
        };
        let now = node_id(v.base.0.grad_fn.borrow().as_ref());
        if !v.grad_mode || now == v.base_fn.get() {
            return;
        }
        v.base_fn.set(now);
        // A map that cannot be built (never for a real view) leaves the history as it is.
        if let Ok(map) = ViewMap::of(&v.base, self) {
            let edges: Edges = std::iter::once(Edge::of(&v.base)).collect();
            let node = autograd::new_node(BackwardOp::AsStrided(map), edges);
            *self.0.grad_fn.borrow_mut() = Some(node);
            self.0.requires_grad.set(true);
        }
    }

    /// The refusals of an in-place op with autograd on `self` (grad mode on and some
    /// operand requiring grad): a leaf requiring grad, a view of one, a view made
    /// under `no_grad`, a view whose elements overlap.
    pub(crate) fn check_inplace(&self) -> Result<()> {
        let refuse = |msg: &str| Err(err(ErrorKind::RuntimeError, msg));
        if let Some(v) = self.0.view.get() {
            if !v.grad_mode {
                return refuse(
                    "A view was created in no_grad mode and is being modified inplace with grad \
                     mode enabled. Given that this use case is ambiguous and error-prone, it is \
                     forbidden. You can clarify your code by moving both the view and the \
                     inplace either both inside the no_grad block (if you don't want the \
                     inplace to be tracked) or both outside (if you want the inplace to be \
                     tracked).",
                );
            }
            if v.base.requires_grad() && v.base.is_leaf() {
                return refuse(
                    "a view of a leaf Variable that requires grad is being used in an in-place \
                     operation.",
                );
            }
            if self.repeats_elements() || v.base.repeats_elements() {
                return refuse(
                    "unsupported operation: more than one element of the written-to tensor \
                     refers to a single memory location. Please clone() the tensor before \
                     performing the operation.",
                );
            }
        }
        if self.requires_grad() && self.is_leaf() {
            return refuse(
                "a leaf Variable that requires grad is being used in an in-place operation.",
            );
        }
        Ok(())
    }

    /// Some element is stored at the same place as another (a broadcast dim: views
    /// can only repeat elements through `expand`'s zero strides).
    fn repeats_elements(&self) -> bool {
        (self.shape().iter().zip(self.strides())).any(|(&n, &s)| n > 1 && s == 0)
    }

    /// After an in-place op with autograd: `node` (whose first edge is `self`'s old
    /// history) produced `self`'s new value. A view's base takes a `CopySlices` node,
    /// and the view reads its history from the base's.
    pub(crate) fn rebase_history(&self, node: Option<Rc<Node>>) -> Result<()> {
        let Some(v) = self.0.view.get() else {
            self.set_grad_fn(node);
            return Ok(());
        };
        let Some(node) = node else {
            return Ok(());
        };
        let map = ViewMap::of(&v.base, self)?;
        let edges: Edges = [Edge::of(&v.base), Edge::Node(node)].into();
        v.base
            .set_grad_fn(Some(autograd::new_node(BackwardOp::CopySlices(map), edges)));
        self.refresh_view_history();
        Ok(())
    }
}
