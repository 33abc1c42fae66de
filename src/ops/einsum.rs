//! `einsum` over any equation of up to any number of operands (`...` included): labels
//! repeated within an operand take its diagonal, labels no other operand or the output
//! has are summed, then the operands are contracted pairwise, left to right, through a
//! batched `matmul`.

use super::shape_more::diagonal;
use crate::error::{ErrorKind, Result};
use crate::tensor::linalg::matmul;
use crate::tensor::{err, Tensor};

/// `einsum(equation, *operands)`: contracted pairwise, left to right, through `matmul`
/// (labels of one operand that no other operand or the output has are summed first).
/// The result's node is the one torch's einsum ends with: a sum (`SumBackward1`) or a
/// permute of one operand, the view of the last contraction's bmm (`ViewBackward0`),
/// or a product when that contraction sums nothing (`MulBackward0`).
pub fn einsum(eq: &str, ops: &[Tensor]) -> Result<Tensor> {
    let bad = |m: String| err(ErrorKind::RuntimeError, format!("einsum(): {m}"));
    let eq: String = eq.chars().filter(|c| !c.is_whitespace()).collect();
    let eq = if eq.contains("...") {
        expand_ellipsis(&eq, ops)?
    } else {
        eq
    };
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l.to_string(), Some(r.to_string())),
        None => (eq.clone(), None),
    };
    let since = crate::autograd::next_node_id();
    let terms: Vec<Vec<char>> = lhs.split(',').map(|t| t.chars().collect()).collect();
    if terms.len() != ops.len() {
        return Err(bad(format!(
            "{} operands given but the equation has {}",
            ops.len(),
            terms.len()
        )));
    }
    for (t, x) in terms.iter().zip(ops) {
        if t.len() != x.ndim() || t.iter().any(|c| !c.is_ascii_alphabetic()) {
            return Err(bad(format!(
                "the subscript '{}' does not match an operand of {} dims",
                t.iter().collect::<String>(),
                x.ndim()
            )));
        }
    }
    let out: Vec<char> = match rhs {
        Some(r) => r.chars().collect(),
        None => {
            let mut once: Vec<char> = terms
                .iter()
                .flatten()
                .copied()
                .filter(|c| terms.iter().flatten().filter(|d| *d == c).count() == 1)
                .collect();
            once.sort_unstable();
            once
        }
    };
    // Repeated labels within one operand: take the diagonal first.
    let mut cur: Vec<(Vec<char>, Tensor)> = vec![];
    for (t, x) in terms.iter().zip(ops) {
        let (mut t, mut x) = (t.clone(), x.clone());
        while let Some((i, j)) = first_repeat(&t) {
            x = diagonal(&x, 0, i as i64, j as i64)?;
            let c = t[i];
            t.remove(j);
            t.remove(i);
            t.push(c);
        }
        cur.push((t, x));
    }
    let size_of = |c: char, cur: &[(Vec<char>, Tensor)]| {
        cur.iter()
            .find_map(|(t, x)| t.iter().position(|&d| d == c).map(|i| x.shape()[i]))
    };
    for &c in &out {
        if size_of(c, &cur).is_none() {
            return Err(bad(format!(
                "output subscript {c} does not appear in the equation for any input operand"
            )));
        }
    }
    let mut acc = cur.remove(0);
    let mut node = "PermuteBackward0";
    acc = sum_unused(acc, &out, &cur)?;
    while !cur.is_empty() {
        // Labels the accumulated operand has are used by `next` too.
        let mut used = out.clone();
        used.extend(acc.0.iter().copied());
        let next = sum_unused(cur.remove(0), &used, &cur)?;
        let keep: Vec<char> = out
            .iter()
            .chain(cur.iter().flat_map(|(t, _)| t))
            .copied()
            .collect();
        let sums = acc
            .0
            .iter()
            .any(|c| next.0.contains(c) && !keep.contains(c));
        node = if sums {
            "ViewBackward0"
        } else {
            "MulBackward0"
        };
        acc = contract(acc, next, &keep)?;
    }
    let (t, x) = sum_unused(acc, &out, &[])?;
    if ops.len() == 1 && t.len() < terms[0].len() - first_repeat_count(&terms[0]) {
        node = "SumBackward1";
    }
    let perm: Vec<i64> = out
        .iter()
        .map(|c| t.iter().position(|d| d == c).unwrap_or(0) as i64)
        .collect();
    let y = x.permute(&perm)?;
    crate::autograd::names::name_composite(&y, since, node);
    Ok(y)
}

/// How many labels of `t` repeat an earlier one (each repeat is a diagonal taken).
fn first_repeat_count(t: &[char]) -> usize {
    (0..t.len()).filter(|&i| t[..i].contains(&t[i])).count()
}

/// The equation with each `...` spelled as labels of their own (unused capitals): an
/// operand's broadcast dims take the last of them (right-aligned, as torch broadcasts
/// them); the output has all of them first when it is implicit.
fn expand_ellipsis(eq: &str, ops: &[Tensor]) -> Result<String> {
    let bad = |m: &str| err(ErrorKind::RuntimeError, format!("einsum(): {m}"));
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (eq, None),
    };
    let terms: Vec<&str> = lhs.split(',').collect();
    let mut widths = Vec::with_capacity(terms.len());
    for (i, t) in terms.iter().enumerate() {
        let labels = t.replace("...", "").chars().count();
        let width = match (t.matches("...").count(), ops.get(i)) {
            (0, _) | (_, None) => 0,
            (1, Some(x)) => x.ndim().checked_sub(labels).ok_or_else(|| {
                bad(&format!(
                    "the subscript '{t}' has more labels than operand {i} has dims"
                ))
            })?,
            _ => {
                return Err(bad(
                    "an operand's subscript has more than one ellipsis ('...')",
                ))
            }
        };
        widths.push(width);
    }
    let n = widths.iter().copied().max().unwrap_or(0);
    let pool: Vec<char> = ('A'..='Z')
        .chain('a'..='z')
        .filter(|c| !eq.contains(*c))
        .take(n)
        .collect();
    if pool.len() < n {
        return Err(bad("too many dims under the ellipsis ('...')"));
    }
    let spell = |w: usize| pool[n - w..].iter().collect::<String>();
    let lhs: Vec<String> = terms
        .iter()
        .zip(&widths)
        .map(|(t, &w)| t.replace("...", &spell(w)))
        .collect();
    let rhs = match rhs {
        Some(r) if r.matches("...").count() > 1 => {
            return Err(bad(
                "the output subscript has more than one ellipsis ('...')",
            ))
        }
        Some(r) => r.replace("...", &spell(n)),
        None => {
            let all: String = lhs.concat();
            let mut once: Vec<char> = all
                .chars()
                .filter(|c| !pool.contains(c) && all.matches(*c).count() == 1)
                .collect();
            once.sort_unstable();
            spell(n) + &once.into_iter().collect::<String>()
        }
    };
    Ok(format!("{}->{rhs}", lhs.join(",")))
}

fn first_repeat(t: &[char]) -> Option<(usize, usize)> {
    (0..t.len()).find_map(|i| (i + 1..t.len()).find(|&j| t[j] == t[i]).map(|j| (i, j)))
}

/// Sums the labels of `(t, x)` that neither the output nor the other operands have.
fn sum_unused(
    tx: (Vec<char>, Tensor),
    out: &[char],
    others: &[(Vec<char>, Tensor)],
) -> Result<(Vec<char>, Tensor)> {
    let (t, x) = tx;
    let used = |c: &char| out.contains(c) || others.iter().any(|(o, _)| o.contains(c));
    let sum_dims: Vec<i64> = (0..t.len())
        .filter(|&i| !used(&t[i]))
        .map(|i| i as i64)
        .collect();
    if sum_dims.is_empty() {
        return Ok((t, x));
    }
    let t2: Vec<char> = t.iter().copied().filter(|c| used(c)).collect();
    Ok((t2, x.sum(&sum_dims, false)?))
}

/// Contracts two operands: labels in both that `keep` lacks are summed by a batched
/// matmul over the shared labels `keep` has.
fn contract(
    a: (Vec<char>, Tensor),
    b: (Vec<char>, Tensor),
    keep: &[char],
) -> Result<(Vec<char>, Tensor)> {
    let (ta, xa) = a;
    let (tb, xb) = b;
    let size =
        |t: &[char], x: &Tensor, c: char| x.shape()[t.iter().position(|&d| d == c).unwrap_or(0)];
    let batch: Vec<char> = ta
        .iter()
        .copied()
        .filter(|c| tb.contains(c) && keep.contains(c))
        .collect();
    let sum: Vec<char> = ta
        .iter()
        .copied()
        .filter(|c| tb.contains(c) && !keep.contains(c))
        .collect();
    let only_a: Vec<char> = ta.iter().copied().filter(|c| !tb.contains(c)).collect();
    let only_b: Vec<char> = tb.iter().copied().filter(|c| !ta.contains(c)).collect();
    for &c in batch.iter().chain(&sum) {
        let (sa, sb) = (size(&ta, &xa, c), size(&tb, &xb, c));
        if sa != sb && sa != 1 && sb != 1 {
            return Err(err(
                ErrorKind::RuntimeError,
                format!("einsum(): operands do not broadcast with remapped shapes (label {c}: {sa} vs {sb})"),
            ));
        }
    }
    let pos = |t: &[char], c: &char| t.iter().position(|d| d == c).unwrap_or(0) as i64;
    let pa: Vec<i64> = batch
        .iter()
        .chain(&only_a)
        .chain(&sum)
        .map(|c| pos(&ta, c))
        .collect();
    let pb: Vec<i64> = batch
        .iter()
        .chain(&sum)
        .chain(&only_b)
        .map(|c| pos(&tb, c))
        .collect();
    let prod = |t: &[char], x: &Tensor, cs: &[char]| {
        cs.iter().map(|&c| size(t, x, c)).product::<usize>() as i64
    };
    let bsz: Vec<i64> = batch
        .iter()
        .map(|&c| size(&ta, &xa, c).max(size(&tb, &xb, c)) as i64)
        .collect();
    let (m, k, n) = (
        prod(&ta, &xa, &only_a),
        prod(&ta, &xa, &sum),
        prod(&tb, &xb, &only_b),
    );
    let kb = prod(&tb, &xb, &sum);
    let mut sa: Vec<i64> = batch.iter().map(|&c| size(&ta, &xa, c) as i64).collect();
    sa.extend([m, k]);
    let mut sb: Vec<i64> = batch.iter().map(|&c| size(&tb, &xb, c) as i64).collect();
    sb.extend([kb, n]);
    let am = xa.permute(&pa)?.reshape(&sa)?;
    let bm = xb.permute(&pb)?.reshape(&sb)?;
    let (am, bm) = if k != kb {
        let kk = k.max(kb);
        let mut ea = bsz.clone();
        ea.extend([m, kk]);
        let mut eb = bsz.clone();
        eb.extend([kk, n]);
        (am.expand(&ea)?, bm.expand(&eb)?)
    } else {
        (am, bm)
    };
    let r = matmul(&am, &bm)?;
    let mut shape = bsz;
    shape.extend(only_a.iter().map(|&c| size(&ta, &xa, c) as i64));
    shape.extend(only_b.iter().map(|&c| size(&tb, &xb, c) as i64));
    let labels: Vec<char> = batch
        .iter()
        .chain(&only_a)
        .chain(&only_b)
        .copied()
        .collect();
    Ok((labels, r.reshape(&shape)?))
}
