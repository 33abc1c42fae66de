//! One memo for the ops whose results come from one computation but are separate graph
//! nodes: a torch.linalg factorization (`slogdet qr svd eigh`, one `IrOp::Linalg` node
//! per result), the gradient kernels that one backward run computes together (the fused
//! attention's dq/dk/dv, the fused LSTM/GRU layers' parts), and what a captured forward
//! keeps for its backward (attention's row logsumexp, the recurrences' gate values).
//! The first node to run computes every result and keeps the others here for the nodes
//! that read them. An entry is keyed by the op and its operands' identity and version,
//! each result is handed out once (a later request, e.g. the same node in the next loop
//! iteration, computes afresh), and the entry is dropped when every result was taken or
//! its operands were freed (entries hold weak handles; a few at most are kept).

use super::hooks::WeakTensor;
use super::linalg_ops::LinalgOp;
use super::{err, Tensor};
use crate::error::{ErrorKind, Result};
use crate::ir::GradKernel;
#[cfg(test)]
use std::cell::Cell;
use std::cell::RefCell;

/// The most entries kept (one per multi-result call of a graph in flight).
const KEEP: usize = 128;

/// The computation an entry's results come from (its part cleared).
#[derive(Debug, Clone, PartialEq)]
pub enum Whole {
    /// A torch.linalg factorization of one input.
    Linalg(LinalgOp),
    /// The parts of a gradient kernel over its args.
    Grad(GradKernel),
    /// What the named forward kept for its backward, keyed by its output.
    Forward(&'static str),
}

/// Identity and version of each tensor of a key.
type Key = Vec<(WeakTensor, u64)>;

struct Entry {
    whole: Whole,
    args: Key,
    parts: Vec<Option<Tensor>>,
}

thread_local! {
    static MEMO: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
    /// How many computations `part_of` ran (read by the tests).
    #[cfg(test)]
    static COMPUTED: Cell<u64> = const { Cell::new(0) };
}

fn key(ts: &[&Tensor]) -> Key {
    ts.iter().map(|t| (t.downgrade(), t.version())).collect()
}

/// Whether `k` names exactly `ts` (alive, same identity, unchanged).
fn matches(k: &Key, ts: &[&Tensor]) -> bool {
    k.len() == ts.len()
        && k.iter()
            .zip(ts)
            .all(|((w, v), t)| w.upgrade().is_some_and(|u| u.same(t)) && *v == t.version())
}

fn alive(k: &Key) -> bool {
    k.iter().all(|(w, _)| w.upgrade().is_some())
}

/// Result `part` of `whole` over `args`: taken from the entry an earlier call kept,
/// else computed by `all` (every result, in order) and the others kept.
pub fn part_of(
    whole: Whole,
    part: usize,
    args: &[&Tensor],
    all: impl FnOnce() -> Result<Vec<Tensor>>,
) -> Result<Tensor> {
    if let Some(t) = take(&whole, part, args) {
        return Ok(t);
    }
    let mut parts: Vec<Option<Tensor>> = all()?.into_iter().map(Some).collect();
    #[cfg(test)]
    COMPUTED.with(|c| c.set(c.get() + 1));
    let out = parts.get_mut(part).and_then(Option::take).ok_or_else(|| {
        err(
            ErrorKind::RuntimeError,
            format!("internal error: no result {part} of {whole:?}"),
        )
    })?;
    store(whole, args, parts);
    Ok(out)
}

/// Keeps `parts` of `whole` over `args` (a forward's values for its backward).
pub fn keep(whole: Whole, args: &[&Tensor], parts: Vec<Tensor>) {
    store(whole, args, parts.into_iter().map(Some).collect());
}

/// Result `part` of the entry of `whole` over `args`, taken (None when there is none or
/// it was handed out already).
pub fn take(whole: &Whole, part: usize, args: &[&Tensor]) -> Option<Tensor> {
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        let i = m
            .iter()
            .position(|e| e.whole == *whole && matches(&e.args, args))?;
        let t = m[i].parts.get_mut(part)?.take();
        if m[i].parts.iter().all(Option::is_none) {
            m.remove(i);
        }
        t
    })
}

/// Adds an entry, replacing one of the same op and args and dropping those whose
/// tensors were freed (the oldest when full).
fn store(whole: Whole, args: &[&Tensor], parts: Vec<Option<Tensor>>) {
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        m.retain(|e| alive(&e.args) && !(e.whole == whole && matches(&e.args, args)));
        if parts.iter().all(Option::is_none) {
            return;
        }
        if m.len() >= KEEP {
            m.remove(0);
        }
        m.push(Entry {
            whole,
            args: key(args),
            parts,
        });
    });
}

#[cfg(test)]
mod tests {
    use super::COMPUTED;
    use crate::tensor::creation::from_f32;
    use crate::tensor::dtype::Scalar;
    use crate::tensor::linalg_decomp as ld;
    use crate::tensor::linalg_ops::{run, LinalgOp};
    use std::cell::Cell;

    fn computed() -> u64 {
        COMPUTED.with(Cell::get)
    }

    fn svd(a: &crate::tensor::Tensor, part: usize) -> Vec<f32> {
        let op = LinalgOp::Svd { full: false, part };
        run(op, &[a]).and_then(|t| t.to_f32_vec()).expect("svd")
    }

    #[test]
    fn one_factorization_serves_each_result_once() {
        let vals = vec![4.0, 1.0, 2.0, 1.0, 3.0, 0.5, 2.0, 0.5, 5.0, 1.5, -1.0, 0.25];
        let a = from_f32(vals.clone(), &[4, 3]).expect("a");
        let (u, s, vh) = ld::svd(&a, false).expect("eager svd");
        let want = [u, s, vh].map(|t| t.to_f32_vec().expect("values"));
        let n0 = computed();
        for (part, w) in want.iter().enumerate() {
            assert_eq!(&svd(&a, part), w, "part {part}");
        }
        assert_eq!(
            computed(),
            n0 + 1,
            "the three results share one factorization"
        );
        // A result already handed out (the same node again) computes afresh.
        assert_eq!(svd(&a, 1), want[1]);
        assert_eq!(computed(), n0 + 2);
        // Another tensor of the same values, or the input written in place, does not
        // reuse the kept results.
        assert_eq!(svd(&from_f32(vals, &[4, 3]).expect("b"), 0), want[0]);
        assert_eq!(computed(), n0 + 3);
        a.fill_(Scalar::Float(1.0)).expect("fill");
        let ones = svd(&a, 1);
        assert_eq!(computed(), n0 + 4);
        assert!(ones[0] > 3.4 && ones[1].abs() < 1e-5, "{ones:?}");
    }
}
