//! Lowering an optimized graph to its runnable form: fused groups compiled once with
//! Cranelift, every other node left to the executor's eager evaluation (passed in by
//! the caller, so this module runs any op the executor knows).
//!
//! A fused group may store several values (`FusedStep::outputs`): the root's step
//! sets them all; buffer planning is in `fused_step`.

use crate::compile::internal;
use crate::compile::ir::{Graph, IrOp, Node, NodeId};
use crate::compile::jit::compile_shared;
use crate::compile::passes::fuse::find_groups;
use crate::compile::runtime::exec::last_reads;
use crate::compile::runtime::fused_step::{FusedStep, GroupValues, Native};
use crate::compile::runtime::gelu_grad;
use crate::compile::runtime::gemm_step::{self, GemmStep};
use crate::compile::runtime::opt_update;
use crate::compile::runtime::run_control::{print_node, ControlStep};
use crate::compile::runtime::side::{self, Side};
use crate::compile::runtime::vecmat_step::{self, VecmatStep};
use crate::compile::sym::{RegionTargets, SymInfo, SymShape};
use crate::error::Result;
use crate::tensor::Tensor;
use smallvec::SmallVec;
use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// What running one node of the graph means.
enum Step {
    /// Evaluate the node with the executor.
    Eval,
    /// Computed inside (later) fused step `k`; nothing to do here.
    Fused(usize),
    /// The root of fused group `k`.
    Kernel(usize),
    /// Control node `k` of `CompiledGraph::controls` (its results go to the tuple table).
    Control(usize),
    /// Result `index` of the control node that is the node's arg.
    Out(usize),
    /// A print node: formats its holes into the print buffer.
    Print,
    /// A matmul computed inside (later) gemm step; nothing to do here.
    InGemm,
    /// Gemm step `k` of `CompiledGraph::gemms` (a matmul with its bias added).
    Gemm(usize),
    /// Vector-matrix step `k` of `CompiledGraph::vecmats`.
    Vecmat(usize),
    /// A node storing or reading a value of the run's side table (`side`).
    Side(Side),
}

/// A graph ready to run: its fused kernels and the plan of which node runs how.
pub struct CompiledGraph {
    pub graph: Graph,
    pub fused: Vec<FusedStep>,
    /// Matmuls with a fused bias epilogue.
    pub gemms: Vec<GemmStep>,
    /// Vector-matrix products into reused buffers.
    pub vecmats: Vec<VecmatStep>,
    /// Compiled regions of the control nodes.
    pub controls: Vec<ControlStep>,
    steps: Vec<Step>,
    /// Per node, the last step that reads it (its value is dropped after that step).
    last_read: Vec<usize>,
    /// Reshape/expand nodes whose target shape is symbolic (sorted by node).
    targets: Vec<(NodeId, SymShape)>,
    /// A run needs the symbols' values: for `targets` or those of a region.
    needs_syms: bool,
    /// The number of slots of a run's side table.
    side_slots: usize,
    /// Wall time spent finding groups and generating code.
    pub compile_time: Duration,
    /// The value table of `run`, kept empty between runs to reuse its allocation.
    scratch: RefCell<Vec<Option<Tensor>>>,
}

/// Fuses and compiles `graph` (already optimized). A group the JIT rejects stays
/// node-by-node (never an error: the executor can run every node).
pub fn compile_graph(graph: Graph) -> Result<CompiledGraph> {
    let (targets, regions) = graph
        .sym
        .as_ref()
        .map_or_else(Default::default, |s| (s.targets.clone(), s.regions.clone()));
    compile_region(graph, targets, &regions)
}

/// `compile_graph` of a graph (a region) whose symbolic targets are `targets` and whose
/// control nodes' regions have those of `regions`, over the top-level graph's symbols.
pub fn compile_region(
    graph: Graph,
    mut targets: Vec<(NodeId, SymShape)>,
    regions: &[RegionTargets],
) -> Result<CompiledGraph> {
    let t0 = Instant::now();
    let mut steps: Vec<Step> = graph.nodes.iter().map(|_| Step::Eval).collect();
    let mut fused = Vec::new();
    for group in find_groups(&graph, &gemm_step::epilogues(&graph)) {
        let Ok(kernel) = compile_shared(&group.kernel) else {
            continue;
        };
        for m in &group.members {
            if let Some(s) = steps.get_mut(m.index()) {
                *s = Step::Fused(fused.len());
            }
        }
        if let Some(s) = steps.get_mut(group.root.index()) {
            *s = Step::Kernel(fused.len());
        }
        let native = opt_update::find(&graph, &group)
            .map(Native::Update)
            .or_else(|| gelu_grad::find(&graph, &group).map(Native::GeluGrad));
        fused.push(FusedStep::new(group, kernel, native));
    }
    let mut controls = Vec::new();
    for (i, node) in graph.nodes.iter().enumerate() {
        let step = match &node.op {
            IrOp::If(_) | IrOp::Loop(_) => {
                let inner: Vec<&RegionTargets> =
                    regions.iter().filter(|r| r.node.index() == i).collect();
                controls.push(ControlStep::new(&node.op, &inner)?);
                Step::Control(controls.len() - 1)
            }
            IrOp::Out { index } => Step::Out(*index),
            IrOp::Print(_) => Step::Print,
            _ => continue,
        };
        steps[i] = step;
    }
    let mut gemms = Vec::new();
    for (i, g) in gemm_step::find(&graph, |i| matches!(steps.get(i), Some(Step::Eval))) {
        steps[g.product.index()] = Step::InGemm;
        steps[i] = Step::Gemm(gemms.len());
        gemms.push(g);
    }
    let mut vecmats = Vec::new();
    for (i, v) in vecmat_step::find(&graph, |i| matches!(steps.get(i), Some(Step::Eval))) {
        steps[i] = Step::Vecmat(vecmats.len());
        vecmats.push(v);
    }
    let (roles, side_slots) = side::find(&graph, |i| matches!(steps.get(i), Some(Step::Eval)));
    for (i, role) in roles {
        steps[i] = Step::Side(role);
    }
    let last_read = last_reads(&graph, |i, n| reads(&steps, &fused, &gemms, i, n));
    targets.sort_by_key(|t| t.0);
    let needs_syms = !targets.is_empty() || controls.iter().any(ControlStep::needs_syms);
    Ok(CompiledGraph {
        graph,
        fused,
        gemms,
        vecmats,
        controls,
        steps,
        last_read,
        targets,
        needs_syms,
        side_slots,
        compile_time: t0.elapsed(),
        scratch: RefCell::new(Vec::new()),
    })
}

/// The values step `i` (node `node`) reads: a node's args, a fused kernel's or gemm
/// step's inputs, or nothing for a node computed inside one.
fn reads<'a>(
    steps: &[Step],
    fused: &'a [FusedStep],
    gemms: &'a [GemmStep],
    i: usize,
    node: &'a Node,
) -> &'a [NodeId] {
    match steps.get(i) {
        Some(Step::Fused(_) | Step::InGemm) => &[],
        Some(Step::Kernel(k)) => fused.get(*k).map_or(&[], |f| &f.inputs),
        Some(Step::Gemm(k)) => gemms.get(*k).map_or(&[], |g| &g.inputs),
        _ => &node.args,
    }
}

impl CompiledGraph {
    /// Outputs the fused kernels, gemm and vector-matrix steps have allocated so far,
    /// those in regions of control nodes included (the rest reused a buffer).
    pub fn fresh_outputs(&self) -> usize {
        let gemm: usize = self.gemms.iter().map(|g| g.pool.fresh_outputs()).sum();
        let vecmat: usize = self.vecmats.iter().map(|v| v.pool.fresh_outputs()).sum();
        let regions = self.controls.iter().flat_map(|c| c.regions());
        let inner: usize = regions.map(|(_, r)| r.fresh_outputs()).sum();
        let fused: usize = self.fused.iter().map(|f| f.pool.fresh_outputs()).sum();
        fused + gemm + vecmat + inner
    }

    /// Fused-kernel runs that took the inline path, those in regions included.
    pub fn inline_runs(&self) -> usize {
        let regions = self.controls.iter().flat_map(|c| c.regions());
        let inner: usize = regions.map(|(_, r)| r.inline_runs()).sum();
        inner + self.fused.iter().map(FusedStep::inline_runs).sum::<usize>()
    }

    /// The nodes that store or read a value of the run's side table (`side`).
    pub fn side_nodes(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| matches!(s, Step::Side(_)))
            .count()
    }

    /// True when `t` (one of this graph's run outputs) is held by nothing but that
    /// output and the fused kernels' and gemm steps' reuse lists: no view, no other
    /// handle.
    pub fn private_value(&self, t: &Tensor) -> bool {
        let fused = self.fused.iter().filter(|f| f.pool.holds(t));
        let gemm = self.gemms.iter().filter(|g| g.pool.holds(t));
        let vecmat = self.vecmats.iter().filter(|v| v.pool.holds(t));
        let kept = fused.count() + gemm.count() + vecmat.count();
        std::rc::Rc::strong_count(t.storage()) == 1 && t.handle_count() == 1 + kept
    }

    /// The optimized graph as text, then one line per fused kernel: the nodes it
    /// computes in one loop nest and the values it reads.
    pub fn to_text(&self, sources: Option<&crate::source::SourceMap>) -> String {
        let mut out = self.graph.to_text(sources);
        self.fused_text("", &mut out);
        out
    }

    /// The number of fused kernels, those in regions of control nodes included.
    pub fn fused_total(&self) -> usize {
        let inner: usize = self
            .controls
            .iter()
            .flat_map(|c| c.regions())
            .map(|(_, r)| r.fused_total())
            .sum();
        self.fused.len() + inner
    }

    /// One line per fused kernel (`where` names the region, e.g. `%2 body: `), then those
    /// of the regions of control nodes.
    fn fused_text(&self, place: &str, out: &mut String) {
        for (k, step) in self.fused.iter().enumerate() {
            let members: Vec<String> = self
                .steps
                .iter()
                .enumerate()
                .filter(|(_, s)| matches!(s, Step::Fused(g) if *g == k))
                .map(|(i, _)| format!("%{i}"))
                .chain(std::iter::once(format!("%{}", step.root.index())))
                .collect();
            let ins: Vec<String> = step
                .inputs
                .iter()
                .map(|a| format!("%{}", a.index()))
                .collect();
            out.push_str(&format!(
                "{place}fused kernel {k}: [{}] reads ({})",
                members.join(", "),
                ins.join(", ")
            ));
            if step.outputs.len() > 1 {
                let outs: Vec<String> = step
                    .outputs
                    .iter()
                    .map(|a| format!("%{}", a.index()))
                    .collect();
                out.push_str(&format!(" writes ({})", outs.join(", ")));
            }
            // (The native GELU is not named: the text would depend on the CPU.)
            if let Some(Native::Update(u)) = &step.native {
                out.push_str(&format!(" ({})", u.name()));
            }
            out.push('\n');
        }
        let nodes = self.graph.nodes.iter().enumerate();
        let controls = nodes.filter_map(|(i, _)| match self.steps.get(i) {
            Some(Step::Control(k)) => self.controls.get(*k).map(|c| (i, c)),
            _ => None,
        });
        for (i, c) in controls {
            for (name, r) in c.regions() {
                r.fused_text(&format!("{place}%{i} {name}: "), out);
            }
        }
    }

    /// Runs the graph; `eval(node, args, inputs)` evaluates a non-fused node; printed
    /// text is appended to `printed` (written by the caller once the whole call succeeded).
    pub fn run<F>(&self, inputs: &[Tensor], eval: &F, printed: &mut String) -> Result<Vec<Tensor>>
    where
        F: Fn(&Node, &[Tensor], &[Tensor]) -> Result<Tensor>,
    {
        let mut outs = Vec::new();
        self.run_values(inputs, None, eval, printed, &mut outs, false)?;
        Ok(outs)
    }

    /// `run` of a region into `outs` (emptied first; a loop reuses one list for every
    /// iteration of its body): `syms` are the top-level call's symbol values.
    pub fn run_region<F>(
        &self,
        inputs: &[Tensor],
        syms: &[i64],
        eval: &F,
        printed: &mut String,
        outs: &mut Vec<Tensor>,
    ) -> Result<()>
    where
        F: Fn(&Node, &[Tensor], &[Tensor]) -> Result<Tensor>,
    {
        self.run_values(inputs, Some(syms), eval, printed, outs, false)
            .map(|_| ())
    }

    /// True when a run needs the symbols' values.
    pub fn needs_syms(&self) -> bool {
        self.needs_syms
    }

    /// Runs the graph keeping every value it materialises (None for a node computed
    /// inside a fused group or a matmul epilogue, and for control nodes): what the
    /// eager check compares node by node with a reference evaluation.
    pub fn run_keeping<F>(&self, inputs: &[Tensor], eval: &F) -> Result<Vec<Option<Tensor>>>
    where
        F: Fn(&Node, &[Tensor], &[Tensor]) -> Result<Tensor>,
    {
        self.run_values(
            inputs,
            None,
            eval,
            &mut String::new(),
            &mut Vec::new(),
            true,
        )
    }

    /// `run_region`; with `keep`, no value is dropped after its last read and the value
    /// table is returned (else an empty list). `outer`: a region's symbol values (else
    /// they are bound from `inputs`).
    fn run_values<F>(
        &self,
        inputs: &[Tensor],
        outer: Option<&[i64]>,
        eval: &F,
        printed: &mut String,
        outs: &mut Vec<Tensor>,
        keep: bool,
    ) -> Result<Vec<Option<Tensor>>>
    where
        F: Fn(&Node, &[Tensor], &[Tensor]) -> Result<Tensor>,
    {
        // The value table's allocation is kept between runs (a loop body runs once per
        // iteration); it is emptied before it is put back, so it holds no tensor.
        let mut vals = self.scratch.take();
        vals.clear();
        vals.resize(self.graph.len(), None);
        let mut tuples: HashMap<usize, Vec<Tensor>> = HashMap::new();
        let mut side: Vec<Option<side::Value>> = Vec::new();
        side.resize_with(self.side_slots, || None);
        let own;
        let syms: &[i64] = match (outer, &self.graph.sym) {
            _ if !self.needs_syms => &[],
            (Some(s), _) => s,
            (None, Some(info)) => {
                own = info.bind(inputs);
                &own
            }
            (None, None) => &[],
        };
        let mut next_target = self.targets.iter().peekable();
        for (i, node) in self.graph.nodes.iter().enumerate() {
            let inst = match next_target.peek() {
                Some((id, target)) if id.index() == i => {
                    next_target.next();
                    Some(
                        SymInfo::instantiate(node, target, syms)
                            .ok_or_else(|| internal("a symbolic size is out of range"))?,
                    )
                }
                _ => None,
            };
            let node = inst.as_ref().unwrap_or(node);
            let step = self.steps.get(i);
            if let Some(Step::Fused(_) | Step::InGemm) = step {
                continue;
            }
            let out = self
                .run_step(
                    step,
                    node,
                    (&vals, &tuples, &mut side, syms),
                    inputs,
                    eval,
                    printed,
                )
                .map_err(|mut e| {
                    if e.span.is_none() {
                        e.span = node.span;
                    }
                    e
                })?;
            match out {
                Produced::One(t) => vals[i] = Some(t),
                Produced::Many(ts) => {
                    tuples.insert(i, ts);
                }
                Produced::Group(ts) => self.store_group(step, ts, &mut vals)?,
                Produced::Nothing => {}
            }
            if keep {
                continue;
            }
            for a in reads(&self.steps, &self.fused, &self.gemms, i, node) {
                if self.last_read.get(a.index()) == Some(&i) {
                    vals[a.index()] = None;
                    if !tuples.is_empty() {
                        tuples.remove(&a.index());
                    }
                }
            }
        }
        outs.clear();
        outs.try_reserve(self.graph.outputs.len())
            .map_err(|_| internal("out of memory for a graph's outputs"))?;
        let mut done = Ok(());
        for o in &self.graph.outputs {
            match vals.get(o.index()).cloned().flatten() {
                Some(t) => outs.push(t),
                None => done = Err(internal("an output was not computed")),
            }
        }
        if keep {
            return done.map(|()| vals);
        }
        vals.clear();
        self.scratch.replace(vals);
        done.map(|()| Vec::new())
    }
}

/// A run's value tables: node values, control-node results, side values and the
/// symbols' values.
type Tables<'t> = (
    &'t [Option<Tensor>],
    &'t HashMap<usize, Vec<Tensor>>,
    &'t mut [Option<side::Value>],
    &'t [i64],
);

/// What one step computed.
enum Produced {
    One(Tensor),
    Many(Vec<Tensor>),
    /// A fused kernel's values, one per node of its `outputs`.
    Group(GroupValues),
    Nothing,
}

impl CompiledGraph {
    #[allow(clippy::too_many_arguments)]
    fn run_step<F>(
        &self,
        step: Option<&Step>,
        node: &Node,
        (vals, tuples, side, syms): Tables,
        inputs: &[Tensor],
        eval: &F,
        printed: &mut String,
    ) -> Result<Produced>
    where
        F: Fn(&Node, &[Tensor], &[Tensor]) -> Result<Tensor>,
    {
        Ok(match step {
            Some(Step::Control(k)) => {
                let c = self
                    .controls
                    .get(*k)
                    .ok_or_else(|| internal("missing control step"))?;
                Produced::Many(c.run(&gather(vals, &node.args)?, syms, eval, printed)?)
            }
            Some(Step::Print) => {
                printed.push_str(&print_node(node, &gather(vals, &node.args)?)?);
                Produced::Nothing
            }
            Some(Step::Out(index)) => Produced::One(
                node.args
                    .first()
                    .and_then(|a| tuples.get(&a.index()))
                    .and_then(|t| t.get(*index))
                    .cloned()
                    .ok_or_else(|| internal("a control result was not computed"))?,
            ),
            Some(Step::Kernel(k)) => {
                let step = self
                    .fused
                    .get(*k)
                    .ok_or_else(|| internal("missing kernel"))?;
                Produced::Group(step.run(node, &gather(vals, &step.inputs)?)?)
            }
            Some(Step::Gemm(k)) => {
                let step = self
                    .gemms
                    .get(*k)
                    .ok_or_else(|| internal("missing gemm step"))?;
                Produced::One(gemm_step::run(step, &gather(vals, &step.inputs)?)?)
            }
            Some(Step::Vecmat(k)) => {
                let step = self
                    .vecmats
                    .get(*k)
                    .ok_or_else(|| internal("missing vector-matrix step"))?;
                Produced::One(vecmat_step::run(step, &gather(vals, &node.args)?)?)
            }
            Some(Step::Side(s)) => {
                let args = gather(vals, &node.args)?;
                let own = || eval(node, &args, inputs);
                Produced::One(side::run(*s, node, &args, side, own)?)
            }
            _ => Produced::One(eval(node, &gather(vals, &node.args)?, inputs)?),
        })
    }
}

impl CompiledGraph {
    /// Stores a fused kernel's values as the values of its output nodes.
    fn store_group(
        &self,
        step: Option<&Step>,
        ts: GroupValues,
        vals: &mut [Option<Tensor>],
    ) -> Result<()> {
        let Some(Step::Kernel(k)) = step else {
            return Err(internal("a group's values outside a kernel step"));
        };
        let f = self
            .fused
            .get(*k)
            .ok_or_else(|| internal("missing kernel"))?;
        for (id, t) in f.outputs.iter().zip(ts) {
            let slot = vals
                .get_mut(id.index())
                .ok_or_else(|| internal("a fused output is out of range"))?;
            *slot = Some(t);
        }
        Ok(())
    }
}

/// The values `ids` name (inline for up to four: no allocation per step).
fn gather(vals: &[Option<Tensor>], ids: &[NodeId]) -> Result<SmallVec<[Tensor; 4]>> {
    ids.iter()
        .map(|a| vals.get(a.index()).cloned().flatten())
        .collect::<Option<SmallVec<[Tensor; 4]>>>()
        .ok_or_else(|| internal("a fused input was not computed"))
}
