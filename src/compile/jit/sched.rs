//! Instruction order of an elementwise kernel's blocks: the unrolled f32x4 chains
//! interleaved in program order (earliest start first), after the optimizer has run.
//!
//! The optimizer places each pure value right before its first side-effecting user, so
//! the 4 vectors of an unrolled loop body come out as chain A, then chain B, ...: a core
//! dispatches in program order, and a long chain (GELU: ~55 cycles, 15 FP ops) fills its
//! FP scheduler with ops waiting on their predecessors while the other chains' ready ops
//! wait behind them. List-scheduling by each instruction's earliest start (its longest
//! latency path from the block's start) gives A1 B1 C1 D1 A2 ... instead
//! (benches/w3_kernel.rs `W3_KERNEL=cpv` measures the effect).
//!
//! Legality: data dependencies are kept (a user starts at least one cycle after its
//! operands); stores and other side-effecting instructions keep their relative order;
//! the terminator stays last. Loads may move above stores: a kernel's inputs and
//! outputs never overlap (they are borrowed as `&[f32]` and `&mut [f32]`, and outputs
//! are checked not to overlap each other), and loads from the read-only constant table
//! cannot alias anything. Constant-table loads are placed right before their user, so
//! the backend still folds them into it as memory operands.
//!
//! An input vector used again far below its previous use (GELU's `x`, the dividend at
//! the end of its chain) is loaded again there: interleaved, the 4 chains' inputs would
//! otherwise stay live through the whole body and be spilled (a stack store and reload
//! each; 11 stack moves per 4 GELU vectors, 5 with the reloads).

use cranelift_codegen::ir::{Block, Function, Inst, Opcode, Value, ValueDef};
use std::collections::HashMap;

/// Approximate result latency in cycles (the order only needs the relative lengths).
fn latency(op: Opcode) -> u32 {
    match op {
        Opcode::Fma | Opcode::Fadd | Opcode::Fsub | Opcode::Fmul => 4,
        Opcode::Fdiv | Opcode::Sqrt => 11,
        Opcode::Load => 5,
        Opcode::Nearest | Opcode::Floor | Opcode::Ceil | Opcode::Trunc => 3,
        _ => 1,
    }
}

/// Reorders the instructions of every block of `func` (see the module docs).
pub(crate) fn interleave(func: &mut Function) {
    let blocks: Vec<Block> = func.layout.blocks().collect();
    for block in blocks {
        schedule_block(func, block);
    }
}

fn is_table_load(func: &Function, inst: Inst) -> bool {
    let data = &func.dfg.insts[inst];
    data.opcode() == Opcode::Load && data.memflags_data(&func.dfg).is_some_and(|f| f.readonly())
}

/// The block-local instruction defining `v`, as an index into the block's body.
fn local_def(func: &Function, pos: &HashMap<Inst, usize>, v: Value) -> Option<usize> {
    match func.dfg.value_def(v) {
        ValueDef::Result(d, _) => pos.get(&d).copied(),
        _ => None,
    }
}

/// Earliest start of each body instruction.
fn earliest_starts(func: &Function, body: &[Inst], pos: &HashMap<Inst, usize>) -> Vec<u32> {
    let mut start = vec![0u32; body.len()];
    let mut last_effect: Option<usize> = None;
    for (i, &inst) in body.iter().enumerate() {
        let mut t = 0;
        for &a in func.dfg.inst_args(inst) {
            if let Some(j) = local_def(func, pos, a) {
                t = t.max(start[j] + latency(func.dfg.insts[body[j]].opcode()));
            }
        }
        let op = func.dfg.insts[inst].opcode();
        if op.can_store() || op.other_side_effects() || op.is_call() || op.can_trap() {
            if let Some(j) = last_effect {
                t = t.max(start[j] + 1);
            }
            last_effect = Some(i);
        }
        start[i] = t;
    }
    start
}

fn schedule_block(func: &mut Function, block: Block) {
    let insts: Vec<Inst> = func.layout.block_insts(block).collect();
    let Some((&term, body)) = insts.split_last() else {
        return;
    };
    let pos: HashMap<Inst, usize> = body.iter().enumerate().map(|(i, &n)| (n, i)).collect();
    let start = earliest_starts(func, body, &pos);
    let mut order: Vec<usize> = (0..body.len())
        .filter(|&i| !is_table_load(func, body[i]))
        .collect();
    // Stable: equal starts keep program order.
    order.sort_by_key(|&i| start[i]);
    for &inst in body {
        func.layout.remove_inst(inst);
    }
    let mut placed = vec![false; body.len()];
    let mut seq: Vec<Inst> = Vec::with_capacity(body.len() + 8);
    for i in order {
        let args: Vec<_> = func.dfg.inst_args(body[i]).to_vec();
        for a in args {
            if let Some(j) = local_def(func, &pos, a) {
                if !placed[j] && is_table_load(func, body[j]) {
                    placed[j] = true;
                    seq.push(body[j]);
                }
            }
        }
        placed[i] = true;
        seq.push(body[i]);
    }
    // Table loads without a user in the block (none are emitted) keep a place anyway.
    for (i, &inst) in body.iter().enumerate() {
        if !placed[i] {
            seq.push(inst);
        }
    }
    for inst in rematerialize_loads(func, seq) {
        func.layout.insert_inst(inst, term);
    }
}

/// Instructions between two uses of a loaded input beyond which the second use reads
/// the input again instead of keeping the value in a register.
const REMAT_DISTANCE: usize = 24;

/// Buffer loads whose value is used again far below its previous use get a fresh copy
/// of the load right before that use: an input is never written while the kernel runs,
/// and a load from L1 costs less than keeping the value live through the interleaved
/// chains (the register allocator would spill it: a store and a reload).
fn rematerialize_loads(func: &mut Function, seq: Vec<Inst>) -> Vec<Inst> {
    // Per vector-load result: the load, the value uses now read, and where that value
    // was last used (or loaded).
    let mut live: HashMap<Value, (Inst, Value, usize)> = HashMap::new();
    let mut out = Vec::with_capacity(seq.len() + 8);
    for inst in seq {
        for k in 0..func.dfg.inst_args(inst).len() {
            let a = func.dfg.inst_args(inst)[k];
            let Some(&(load, mut cur, at)) = live.get(&a) else {
                continue;
            };
            if out.len() - at > REMAT_DISTANCE {
                let copy = func.dfg.clone_inst(load);
                cur = func.dfg.first_result(copy);
                out.push(copy);
            }
            func.dfg.inst_args_mut(inst)[k] = cur;
            live.insert(a, (load, cur, out.len()));
        }
        if is_vector_load(func, inst) {
            let v = func.dfg.first_result(inst);
            live.insert(v, (inst, v, out.len()));
        }
        out.push(inst);
    }
    out
}

/// A vector load from a kernel buffer (not from the constant table).
fn is_vector_load(func: &Function, inst: Inst) -> bool {
    func.dfg.insts[inst].opcode() == Opcode::Load
        && !is_table_load(func, inst)
        && func.dfg.ctrl_typevar(inst).is_vector()
}
