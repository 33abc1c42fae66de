//! Gradient hooks of a tensor (`register_hook`, `retain_grad`): the callables the
//! backward sweep runs on the tensor's gradient, kept as opaque `Rc<dyn Any>` (the
//! interpreter's function values; this layer never looks inside), and whether a non-leaf
//! keeps its gradient in `.grad`, and the post-accumulate hooks
//! (`register_post_accumulate_grad_hook`) a leaf runs once its `.grad` was updated.

use super::{Tensor, TensorImpl};
use std::any::Any;
use std::cell::Cell;
use std::rc::{Rc, Weak};

/// One tensor's hooks, in registration order.
#[derive(Default)]
pub struct GradHooks {
    hooks: Vec<(u64, Rc<dyn Any>)>,
    post: Vec<(u64, Rc<dyn Any>)>,
    retain: bool,
}

/// A tensor that does not keep its data alive (a graph node's view of its output).
#[derive(Clone)]
pub struct WeakTensor(Weak<TensorImpl>);

impl WeakTensor {
    pub fn upgrade(&self) -> Option<Tensor> {
        self.0.upgrade().map(Tensor)
    }

    /// Whether both name the same tensor.
    pub fn same(&self, other: &WeakTensor) -> bool {
        Weak::ptr_eq(&self.0, &other.0)
    }

    /// The tensor's `id()`, even once it is freed (while this handle lives, no other
    /// tensor gets that address).
    pub fn id(&self) -> usize {
        Weak::as_ptr(&self.0) as usize
    }
}

thread_local! {
    static NEXT_HOOK: Cell<u64> = const { Cell::new(1) };
}

fn next_hook_id() -> u64 {
    NEXT_HOOK.with(|n| {
        let id = n.get();
        n.set(id + 1);
        id
    })
}

impl Tensor {
    pub fn downgrade(&self) -> WeakTensor {
        WeakTensor(Rc::downgrade(&self.0))
    }

    fn with_hooks<T>(&self, f: impl FnOnce(&mut GradHooks) -> T) -> T {
        let mut slot = self.0.hooks.borrow_mut();
        f(slot.get_or_insert_with(Box::default))
    }

    /// A non-leaf's gradient is seen by the sweep at its graph node: tell the node.
    fn watch(&self) {
        if let Some(node) = self.grad_fn() {
            node.watch(self.downgrade());
        }
    }

    /// Adds a gradient hook; returns its id (for `remove_hook`).
    pub fn add_hook(&self, f: Rc<dyn Any>) -> u64 {
        let id = next_hook_id();
        self.with_hooks(|h| h.hooks.push((id, f)));
        self.watch();
        id
    }

    /// Adds a post-accumulate hook (a leaf's: run with the leaf after each backward
    /// sweep updated its `.grad`); returns its id (for `remove_hook`).
    pub fn add_post_hook(&self, f: Rc<dyn Any>) -> u64 {
        let id = next_hook_id();
        self.with_hooks(|h| h.post.push((id, f)));
        id
    }

    /// Removes hook `id` (of either kind); false when it was already removed.
    pub fn remove_hook(&self, id: u64) -> bool {
        self.with_hooks(|h| {
            let before = h.hooks.len() + h.post.len();
            h.hooks.retain(|(i, _)| *i != id);
            h.post.retain(|(i, _)| *i != id);
            h.hooks.len() + h.post.len() != before
        })
    }

    /// `retain_grad()`: a non-leaf keeps its gradient in `.grad` (a leaf always does).
    pub fn retain_grad(&self) {
        if !self.is_leaf() {
            self.with_hooks(|h| h.retain = true);
            self.watch();
        }
    }

    /// Whether `retain_grad()` was called on this non-leaf.
    pub fn retains_grad(&self) -> bool {
        self.0.hooks.borrow().as_ref().is_some_and(|h| h.retain)
    }

    /// The hooks to run, in registration order (a snapshot: a hook may add or remove).
    pub fn hook_fns(&self) -> Vec<Rc<dyn Any>> {
        match self.0.hooks.borrow().as_ref() {
            Some(h) => h.hooks.iter().map(|(_, f)| f.clone()).collect(),
            None => Vec::new(),
        }
    }

    /// The post-accumulate hooks to run, in registration order (a snapshot).
    pub fn post_hook_fns(&self) -> Vec<Rc<dyn Any>> {
        match self.0.hooks.borrow().as_ref() {
            Some(h) => h.post.iter().map(|(_, f)| f.clone()).collect(),
            None => Vec::new(),
        }
    }

    /// Whether the sweep has anything to do for this tensor's gradient.
    pub fn has_grad_hooks(&self) -> bool {
        self.0
            .hooks
            .borrow()
            .as_ref()
            .is_some_and(|h| h.retain || !h.hooks.is_empty())
    }
}
