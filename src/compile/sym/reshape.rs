//! Symbolic targets of `reshape`, `expand` and `index_backward`. For reshape and expand
//! two derivations must agree: the exact one
//! from the sizes the call asked for (a `-1` is the inferred, symbolic dim; explicit
//! sizes are Python ints, constants unless a size read already specialised them), and a
//! structural one from the shapes alone (which is what the optimized graph, whose
//! passes may merge or drop reshapes by their capture-time shapes, re-derives). When
//! they differ, or either fails, the input's symbols are specialised.

use super::analyze::{product, Walk};
use super::expr::{fixed_shape, SymExpr, SymShape};
use crate::compile::ir::{IrIndex, IrOp, Node, NodeId};

impl Walk<'_> {
    /// The sizes a reshape/expand call asked for: a constant, `-1` (None), or the
    /// expression of a symbolic int.
    fn request(&self, id: NodeId) -> Option<Vec<Option<SymExpr>>> {
        let h = self.hints?;
        let req = h.requests.get(&id)?;
        let syms = h.sym_requests.get(&id);
        let out = req.iter().enumerate().map(|(i, &r)| {
            match syms.and_then(|s| s.get(i)).cloned().flatten() {
                Some(e) => Some(self.solver.norm(&e)),
                None => (r >= 0).then(|| SymExpr::konst(r)),
            }
        });
        Some(out.collect())
    }

    fn agree(
        &mut self,
        node: &Node,
        x: &[SymExpr],
        a: Option<SymShape>,
        b: Option<SymShape>,
    ) -> SymShape {
        if let (Some(a), Some(b)) = (&a, &b) {
            let na: SymShape = a.iter().map(|e| self.solver.norm(e)).collect();
            let nb: SymShape = b.iter().map(|e| self.solver.norm(e)).collect();
            if na == nb {
                return a.clone();
            }
        }
        // The capture-time shape stands: every symbol it was derived from keeps its
        // value, the input's and the requested sizes' (a guard, never a stale size).
        self.solver.specialize_all(x);
        for derived in [a, b].into_iter().flatten() {
            self.solver.specialize_all(&derived);
        }
        fixed_shape(&node.shape)
    }

    pub(super) fn reshape(&mut self, id: NodeId, node: &Node, x: &[SymExpr]) -> SymShape {
        if x.iter().all(|e| e.as_const().is_some()) {
            return fixed_shape(&node.shape);
        }
        let x_ex: Vec<usize> = self.arg_example(node, 0);
        let structural = structural_reshape(x, &x_ex, &node.shape);
        let exact = match self.request(id) {
            Some(req) => {
                let xn: SymShape = x.iter().map(|e| self.solver.norm(e)).collect();
                exact_reshape(&xn, &req)
            }
            None => structural.clone(),
        };
        self.agree(node, x, structural, exact)
    }

    pub(super) fn expand(&mut self, id: NodeId, node: &Node, x: &[SymExpr]) -> SymShape {
        let x_ex: Vec<usize> = self.arg_example(node, 0);
        let out = &node.shape;
        let Some(lead) = out.len().checked_sub(x.len()) else {
            return self.agree(node, x, None, None);
        };
        let structural: SymShape = (0..out.len())
            .map(|i| match i.checked_sub(lead) {
                Some(j) if x_ex.get(j) == out.get(i) => x[j].clone(),
                _ => SymExpr::konst(out[i] as i64),
            })
            .collect();
        if let IrOp::Expand { sym, .. } = &node.op {
            if !sym.is_empty() {
                let carried = self.carried_expand(sym, structural);
                if carried.is_none() {
                    // Pinned: the sizes it was asked for keep their values (a guard).
                    for r in sym.iter().flatten() {
                        if let Some(e) = self.over_symbols(r) {
                            self.solver.specialize(&e);
                        }
                    }
                }
                return self.agree(node, x, carried.clone(), carried);
            }
        }
        let exact = match self.request(id) {
            Some(req) if req.len() == out.len() => Some(
                req.into_iter()
                    .enumerate()
                    .map(|(i, r)| match (i.checked_sub(lead), r) {
                        (Some(j), None) => x[j].clone(),
                        (Some(j), Some(c)) if x_ex.get(j) != Some(&1) => {
                            self.solver.unify(&x[j], &c);
                            c
                        }
                        (_, r) => r.unwrap_or_else(|| SymExpr::konst(-1)),
                    })
                    .collect(),
            ),
            Some(_) => None,
            None => Some(structural.clone()),
        };
        self.agree(node, x, Some(structural), exact)
    }
}

impl Walk<'_> {
    /// `index_backward` (zeros of the indexed input's shape, the gradient `args[0]`
    /// added at `indices`): a dim a full slice `:` keeps (or one after the indices)
    /// follows the gradient's, every other dim is its constant size (the gradient's
    /// dims a partial slice selects must be constants). Else the capture-time shape.
    pub(super) fn index_grad(
        &mut self,
        node: &Node,
        indices: &[IrIndex],
        args: &[SymShape],
    ) -> SymShape {
        let konst = |d: usize| SymExpr::konst(node.shape.get(d).map_or(0, |&n| n as i64));
        let Some(g) = args.first() else {
            return self.opaque(node, args);
        };
        let (mut out, mut gd) = (Vec::with_capacity(node.shape.len()), 0usize);
        for ix in indices {
            match ix {
                IrIndex::Slice { start, stop, step } => {
                    let full = matches!(start, None | Some(0))
                        && stop.is_none()
                        && matches!(step, None | Some(1));
                    let Some(e) = g.get(gd) else {
                        return self.opaque(node, args);
                    };
                    if !full && e.as_const().is_none() {
                        return self.opaque(node, args);
                    }
                    out.push(if full { e.clone() } else { konst(out.len()) });
                    gd += 1;
                }
                IrIndex::Int(_) => out.push(konst(out.len())),
                IrIndex::Indices { arg } if args.get(*arg).is_some_and(|a| a.is_empty()) => {
                    out.push(konst(out.len()));
                }
                IrIndex::NewAxis => gd += 1,
                _ => return self.opaque(node, args),
            }
        }
        out.extend(g.iter().skip(gd).cloned());
        if out.len() != node.shape.len() {
            return self.opaque(node, args);
        }
        out
    }

    /// The target of an expand whose op carries symbolic sizes (`zeros(T, C)`): those
    /// sizes over this analysis's symbols where given (each `>= 0` and equal to its
    /// capture-time size), the structural size elsewhere.
    fn carried_expand(
        &mut self,
        sym: &[Option<SymExpr>],
        structural: SymShape,
    ) -> Option<SymShape> {
        if sym.len() != structural.len() {
            return None;
        }
        let mut out = Vec::with_capacity(sym.len());
        for (s, st) in sym.iter().zip(structural) {
            let Some(r) = s else {
                out.push(st);
                continue;
            };
            let e = self.solver.norm(&self.over_symbols(r)?);
            if st.as_const().is_some() {
                if self.solver.eval(&e) != self.solver.eval(&st) {
                    return None;
                }
            } else {
                self.solver.unify(&st, &e);
            }
            self.solver.require_nonneg(&e);
            out.push(e);
        }
        Some(out)
    }
}

/// From the request: explicit sizes are constants or symbolic ints' expressions, the
/// `-1` dim (None) is the input's element count divided by theirs (when those are
/// constants). Without a `-1` the request must hold the input's symbols.
fn exact_reshape(x: &[SymExpr], req: &[Option<SymExpr>]) -> Option<SymShape> {
    let total = product(x)?;
    let inferred = req.iter().any(Option::is_none);
    if !inferred {
        let asked = req.iter().flatten().cloned().collect::<Vec<_>>();
        return (product(&asked)? == total).then_some(asked);
    }
    let known = req
        .iter()
        .flatten()
        .try_fold(1i64, |acc, r| acc.checked_mul(r.as_const()?))?;
    req.iter()
        .map(|r| match r {
            Some(e) => Some(e.clone()),
            None => total.div_exact(known),
        })
        .collect()
}

/// From the shapes: the input and output are cut into the smallest groups of equal
/// element count; a group holding a symbol maps its product to one output dim of size
/// other than 1 (`split_group`), the others keeping their sizes.
fn structural_reshape(x: &[SymExpr], x_ex: &[usize], out_ex: &[usize]) -> Option<SymShape> {
    if x_ex == out_ex {
        return Some(x.to_vec());
    }
    let non1 = |s: &[usize]| s.iter().filter(|&&d| d != 1).copied().collect::<Vec<_>>();
    if non1(x_ex) == non1(out_ex) {
        let mut rest = x.iter().zip(x_ex).filter(|(_, &d)| d != 1).map(|(e, _)| e);
        return out_ex
            .iter()
            .map(|&d| {
                if d == 1 {
                    Some(SymExpr::konst(1))
                } else {
                    rest.next().cloned()
                }
            })
            .collect();
    }
    if x_ex.contains(&0) || out_ex.contains(&0) {
        return None;
    }
    let mut out = Vec::with_capacity(out_ex.len());
    let (mut i, mut j) = (0usize, 0usize);
    while i < x_ex.len() || j < out_ex.len() {
        let (si, sj) = (i, j);
        let (mut pi, mut pj) = (1u128, 1u128);
        loop {
            let done_i = i > si || i == x_ex.len();
            let done_j = j > sj || j == out_ex.len();
            if done_i && done_j && pi == pj {
                break;
            }
            if (pi <= pj && i < x_ex.len()) || j == out_ex.len() {
                pi = pi.checked_mul(*x_ex.get(i)? as u128)?;
                i += 1;
            } else {
                pj = pj.checked_mul(out_ex[j] as u128)?;
                j += 1;
            }
        }
        let group = product(&x[si..i])?;
        let dims = &out_ex[sj..j];
        if group.as_const().is_some() {
            out.extend(fixed_shape(dims));
            continue;
        }
        let (k, size) = split_group(&group, dims)?;
        for (m, &d) in dims.iter().enumerate() {
            out.push(if m == k {
                size.clone()
            } else {
                SymExpr::konst(d as i64)
            });
        }
    }
    Some(out)
}

/// The one dim of `dims` (not 1) that takes symbolic group size `group`, and its size:
/// the product of the others (constants) must divide every coefficient of `group`
/// (`3*T` into `(3, T)`: the 3 divides, the capture-time T does not). A true split
/// always qualifies (its other dims are constants whose product divides the group), so
/// when only one dim does it is the symbolic one; None when none or several do (`3*T`
/// traced at T = 3 into `(3, 3)`).
fn split_group(group: &SymExpr, dims: &[usize]) -> Option<(usize, SymExpr)> {
    let mut found = None;
    for (k, &d) in dims.iter().enumerate() {
        if d == 1 {
            continue;
        }
        let others = dims
            .iter()
            .enumerate()
            .filter(|&(m, _)| m != k)
            .try_fold(1i64, |acc, (_, &x)| acc.checked_mul(i64::try_from(x).ok()?))?;
        if let Some(size) = group.div_exact(others) {
            if found.is_some() {
                return None;
            }
            found = Some((k, size));
        }
    }
    found
}
