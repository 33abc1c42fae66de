//! Symbolic shapes of torch.linalg's graph ops (`IrOp::Linalg`), as `LinalgOp::out_shape`
//! derives the concrete ones: a square input ties its last two sizes, and the results
//! follow the batch and the matrix size, so a `dynamic` function over matrices of any
//! size is one graph. `qr` and `svd`, whose result sizes take a `min` of two sizes, are
//! specialised.

use super::analyze::Walk;
use super::expr::SymShape;
use crate::compile::ir::Node;
use crate::tensor::linalg_ops::LinalgOp;

impl Walk<'_> {
    /// The shape of linalg node `node` from its arguments' shapes.
    pub(super) fn linalg(&mut self, node: &Node, op: &LinalgOp, args: &[SymShape]) -> SymShape {
        let shape = match (op, args) {
            (LinalgOp::GapInverse { .. }, [x]) => {
                x.last().map(|n| [&x[..], std::slice::from_ref(n)].concat())
            }
            (
                LinalgOp::Inv
                | LinalgOp::Cofactor
                | LinalgOp::Cholesky { .. }
                | LinalgOp::Eigh { part: 1, .. },
                [a],
            ) => self.square(a).map(|_| a.clone()),
            (LinalgOp::Det | LinalgOp::Slogdet { .. }, [a]) => {
                self.square(a).map(|_| a[..a.len() - 2].to_vec())
            }
            (LinalgOp::Eigh { part: 0, .. }, [a]) => {
                self.square(a).map(|_| a[..a.len() - 1].to_vec())
            }
            (LinalgOp::Solve, [a, b]) if b.len() == a.len() => self.square(a).map(|_| {
                // solve's arguments share their batch (linalg.solve expands them) and B's
                // rows are A's size.
                for (p, q) in a[..a.len() - 1].iter().zip(b) {
                    self.solver.unify(p, q);
                }
                b.clone()
            }),
            (LinalgOp::Pinv { .. }, [a]) if a.len() >= 2 => {
                let nd = a.len();
                Some([&a[..nd - 2], &[a[nd - 1].clone(), a[nd - 2].clone()]].concat())
            }
            _ => None,
        };
        match shape {
            Some(s) if s.len() == node.shape.len() => s,
            _ => self.opaque(node, args),
        }
    }

    /// Ties the last two sizes of `a` (a batch of square matrices); None below 2-D.
    fn square(&mut self, a: &SymShape) -> Option<()> {
        let nd = a.len();
        (nd >= 2).then(|| self.solver.unify(&a[nd - 2], &a[nd - 1]))
    }
}
