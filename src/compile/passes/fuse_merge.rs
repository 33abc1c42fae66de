//! Multi-output fusion: after `fuse` grouped single-use trees, a producer group whose
//! values a later group of the same loop shape reads joins that consumer, and the
//! producer's values that are still needed outside (graph outputs such as Adam's new
//! moments, or later nodes) become extra outputs of the one loop nest. Adam's
//! `m`, `v` and `p` updates of one parameter thus read `g`, `m`, `v`, `p` once and write
//! all three in one kernel.
//!
//! Legality: the merged group runs at the consumer root's position, so every reader of
//! a producer value outside the consumer must run after that root (a reader in between,
//! or one the consumer depends on, keeps the groups apart).

use crate::compile::ir::Graph;
use std::collections::HashMap;

/// The most members a merged group may have (bounds kernel size and compile time).
const MAX_MEMBERS: usize = 256;

/// Who reads each node: the nodes using it and whether it is a graph output.
pub struct Readers {
    users: Vec<Vec<usize>>,
    is_output: Vec<bool>,
}

impl Readers {
    pub fn new(g: &Graph) -> Readers {
        let mut users = vec![Vec::new(); g.len()];
        for (i, n) in g.nodes.iter().enumerate() {
            for a in &n.args {
                if let Some(u) = users.get_mut(a.index()) {
                    if u.last() != Some(&i) {
                        u.push(i);
                    }
                }
            }
        }
        let mut is_output = vec![false; g.len()];
        for o in &g.outputs {
            if let Some(x) = is_output.get_mut(o.index()) {
                *x = true;
            }
        }
        Readers { users, is_output }
    }

    /// Whether node `m` of the group rooted at `root` is read outside the group.
    pub fn exposed(&self, group_of: &[Option<usize>], root: usize, m: usize) -> bool {
        self.is_output.get(m) == Some(&true)
            || self
                .users
                .get(m)
                .is_some_and(|us| us.iter().any(|&u| group_of.get(u) != Some(&Some(root))))
    }
}

/// Where a node's value is computed: its group's root, else the node itself.
fn run_pos(group_of: &[Option<usize>], u: usize) -> usize {
    group_of.get(u).copied().flatten().unwrap_or(u)
}

/// Merges producer groups into their consumers (see the module doc). `group_of[i]`:
/// the root of node `i`'s group (every fusable node has one, a lone node its own);
/// `producer[r]`: root `r` may feed another group (elementwise, not a reduction);
/// `shape_of(r)`: the loop shape of the group rooted at `r`.
pub fn merge<'s>(
    readers: &Readers,
    group_of: &mut [Option<usize>],
    producer: &[bool],
    shape_of: impl Fn(usize) -> &'s [usize],
) {
    let mut members: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, r) in group_of.iter().enumerate() {
        if let Some(r) = r {
            members.entry(*r).or_default().push(i);
        }
    }
    for p in (0..group_of.len()).rev() {
        if group_of[p] != Some(p) || producer.get(p) != Some(&true) {
            continue;
        }
        let Some(mine) = members.get(&p) else {
            continue;
        };
        let Some(c) = consumer(readers, group_of, p, mine) else {
            continue;
        };
        let theirs = members.get(&c).map_or(0, Vec::len);
        if shape_of(c) != shape_of(p) || theirs + mine.len() > MAX_MEMBERS {
            continue;
        }
        let moved = members.remove(&p).unwrap_or_default();
        for &m in &moved {
            group_of[m] = Some(c);
        }
        members.entry(c).or_default().extend(moved);
    }
}

/// The group `p`'s members should join: the earliest place any of their values is read
/// outside the group, when that is another group's root (a graph output reads last).
fn consumer(
    readers: &Readers,
    group_of: &[Option<usize>],
    p: usize,
    mine: &[usize],
) -> Option<usize> {
    let outside = mine
        .iter()
        .filter_map(|&m| readers.users.get(m))
        .flatten()
        .copied()
        .filter(|&u| group_of.get(u) != Some(&Some(p)));
    let first = outside.map(|u| run_pos(group_of, u)).min()?;
    (first != p && group_of.get(first) == Some(&Some(first))).then_some(first)
}
