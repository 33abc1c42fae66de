//! Lowering control nodes to ONNX: `If` -> `If` with then/else subgraphs, `Loop` ->
//! `Loop` (the IR condition region evaluated once before the loop and again at the end
//! of each body for the next iteration), `Out` -> one result name of its control node.
//! Regions read outer values through their bound inputs, which become the outer value
//! names (ONNX subgraphs see the enclosing scope). With dynamic axes a region's sizes
//! follow its bound values' (`dims::region_syms`): its shape operands read the symbols'
//! `Shape` values of the enclosing graph, and its outputs and a loop's carried inputs
//! are typed with `dim_param`s. `Print` has no ONNX form: refused.

use super::builder::{attr_g, tensor_proto, unsupported};
use super::dims::Syms;
use super::export::{named_value_info, typed_value_info};
use super::lower::Lower;
use super::proto::{GraphProto, NodeProto, ValueInfoProto};
use crate::compile::capture::log::where_text;
use crate::compile::ir::control::{Branch, LoopSpec, TripCount};
use crate::compile::ir::{Graph, InputKind, IrOp, Node, NodeId};
use crate::error::Result;
use crate::tensor::dtype::{DType, Scalar};

impl<'g> Lower<'g> {
    /// Lowers `If`, `Loop`, `Out` and `Print` node `id`; a control node's own value
    /// name is empty (its results are read by `Out`).
    pub fn control(&mut self, id: NodeId, n: &'g Node) -> Result<String> {
        match &n.op {
            IrOp::If(b) => {
                let outs = self.branch(n, b)?;
                self.multi.insert(id.index(), outs);
                Ok(String::new())
            }
            IrOp::Loop(l) => {
                let outs = self.loop_(n, l)?;
                self.multi.insert(id.index(), outs);
                Ok(String::new())
            }
            IrOp::Out { index } => {
                let src = n.args.first().map(|a| a.index());
                src.and_then(|s| self.multi.get(&s))
                    .and_then(|outs| outs.get(*index))
                    .cloned()
                    .ok_or_else(|| self.bad("a result of a missing control node"))
            }
            IrOp::Print(_) => Err(unsupported(
                "print (an output effect inside the graph)",
                &self.at,
            )),
            other => Err(unsupported(other.name(), &self.at)),
        }
    }

    /// The value names of `n`'s args from position `from` on.
    fn arg_names(&self, n: &Node, from: usize) -> Vec<String> {
        let args = n.args.get(from..).unwrap_or(&[]);
        args.iter()
            .map(|a| self.vals.get(a.index()).cloned().unwrap_or_default())
            .collect()
    }

    /// A one-element tensor as the 0-d bool ONNX `If`/`Loop` conditions take.
    fn bool_scalar(&mut self, name: &str, dtype: DType) -> String {
        let c = self.b.cast(name, dtype, DType::Bool);
        let shape = self.b.const_i64(&[], false);
        self.b.op("Reshape", &[&c, &shape], vec![])
    }

    fn branch(&mut self, n: &'g Node, b: &'g Branch) -> Result<Vec<String>> {
        let c = self.arg(n, 0)?;
        let cond = self.bool_scalar(&c.name, c.dtype);
        let bound = self.arg_names(n, 1);
        let ids: Vec<Option<NodeId>> = n.args.iter().skip(1).map(|a| Some(*a)).collect();
        let then_syms = self.region_syms(&b.then_g, &ids);
        let else_syms = self.region_syms(&b.else_g, &ids);
        let then_g = self.subgraph("then", &b.then_g, &bound, then_syms)?;
        let else_g = self.subgraph("else", &b.else_g, &bound, else_syms)?;
        let outs: Vec<String> = (0..b.then_g.outputs.len())
            .map(|_| self.b.fresh("if_out"))
            .collect();
        let attrs = vec![attr_g("then_branch", then_g), attr_g("else_branch", else_g)];
        self.b.op_outs("If", &[&cond], attrs, outs.clone());
        Ok(outs)
    }

    /// A subgraph (no inputs) computing region `g` with bound inputs `bound`.
    fn subgraph(
        &mut self,
        name: &str,
        g: &'g Graph,
        bound: &[String],
        syms: Option<Syms<'g>>,
    ) -> Result<GraphProto> {
        let outer = std::mem::take(&mut self.b.nodes);
        let res = self
            .inline(g, bound, syms)
            .and_then(|outs| self.sub_outputs(g, &outs));
        let nodes = std::mem::replace(&mut self.b.nodes, outer);
        Ok(graph_proto(name, nodes, Vec::new(), res?))
    }

    /// Identity nodes from region `g`'s output values to fresh subgraph output names.
    fn sub_outputs(&mut self, g: &Graph, outs: &[RegionOut]) -> Result<Vec<ValueInfoProto>> {
        let mut infos = Vec::with_capacity(outs.len());
        for (id, out) in g.outputs.iter().zip(outs) {
            let node = g
                .node(*id)
                .ok_or_else(|| self.bad("a dangling region output"))?;
            let name = self.b.fresh("sub_out");
            self.b.op_to("Identity", &[&out.name], vec![], name.clone());
            let axes = out.axes.as_ref();
            infos.push(named_value_info(&name, node.dtype, &node.shape, axes));
        }
        Ok(infos)
    }

    /// Lowers region `g` into the current node list with its inputs bound to `bound`
    /// (value names in slot order) and sizes `syms`; returns its outputs.
    fn inline(
        &mut self,
        g: &'g Graph,
        bound: &[String],
        syms: Option<Syms<'g>>,
    ) -> Result<Vec<RegionOut>> {
        let b = std::mem::take(&mut self.b);
        let mut lw = Lower::new(b, g, self.sources, self.at.clone());
        lw.syms = syms;
        let res = lw.region_nodes(bound).map(|names| {
            let outs = names.into_iter().zip(&g.outputs);
            outs.map(|(name, id)| RegionOut {
                name,
                axes: lw.dim_params(*id),
            })
            .collect()
        });
        self.b = lw.b;
        res
    }

    fn region_nodes(&mut self, bound: &[String]) -> Result<Vec<String>> {
        for (i, node) in self.g.nodes.iter().enumerate() {
            self.at = where_text(self.sources, node.span);
            self.b.doc = self.at.clone();
            let name = match &node.op {
                IrOp::Input {
                    slot,
                    kind: InputKind::Bound,
                } => bound
                    .get(*slot)
                    .cloned()
                    .ok_or_else(|| self.bad("an unbound region input"))?,
                IrOp::Const(t) => {
                    let name = self.b.fresh("region_const");
                    self.b.inits.push(tensor_proto(&name, t)?);
                    name
                }
                _ => self.node(NodeId(i as u32))?,
            };
            if let Some(v) = self.vals.get_mut(i) {
                *v = name;
            }
        }
        let outs = self.g.outputs.iter();
        outs.map(|id| self.vals.get(id.index()).cloned())
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| self.bad("a dangling region output"))
    }

    fn loop_(&mut self, n: &'g Node, l: &'g LoopSpec) -> Result<Vec<String>> {
        if l.scan != 0 || l.reverse {
            // Only compiled autograd makes these (saved iterations, backward loops).
            return Err(self.bad("a loop with scan outputs or run in reverse"));
        }
        let init = self.arg_names(n, 0);
        let (init, inv) = init.split_at(l.carried.min(init.len()));
        let trip = self.trip_count(n, &l.trip)?;
        // The regions' bound values: the index, then the node's args.
        let mut ids: Vec<Option<NodeId>> = vec![None];
        ids.extend(n.args.iter().map(|a| Some(*a)));
        let cond_syms = l.cond.as_ref().and_then(|c| self.region_syms(c, &ids));
        let body_syms = self.region_syms(&l.body, &ids);
        let cond0 = match &l.cond {
            Some(c) => {
                let index = self.b.const_scalar(Scalar::Int(l.start), DType::I64);
                self.cond_value(c, &index, init, inv, cond_syms.clone())?
            }
            None => String::new(),
        };
        let body = self.loop_body(n, l, inv, (cond_syms, body_syms))?;
        let outs: Vec<String> = (0..l.carried).map(|_| self.b.fresh("loop_out")).collect();
        let mut inputs: Vec<&str> = vec![&trip, &cond0];
        inputs.extend(init.iter().map(String::as_str));
        self.b
            .op_outs("Loop", &inputs, vec![attr_g("body", body)], outs.clone());
        Ok(outs)
    }

    /// The ONNX `M` input: the trip count as a 0-d int64, or empty when unbounded.
    fn trip_count(&mut self, n: &'g Node, trip: &TripCount) -> Result<String> {
        let k = match trip {
            TripCount::Unbounded => return Ok(String::new()),
            TripCount::Const(k) => *k,
            TripCount::Dim { arg, dim } => {
                let a = self.arg(n, *arg)?;
                let size = *a
                    .shape
                    .get(*dim)
                    .ok_or_else(|| self.bad("a loop over a missing dimension"))?;
                return self.dim_scalar(a.id, *dim, size);
            }
        };
        Ok(self.b.const_scalar(Scalar::Int(k as i64), DType::I64))
    }

    /// Evaluates the condition region inline on `[index, carried..., invariant...]`.
    fn cond_value(
        &mut self,
        c: &'g Graph,
        index: &str,
        carried: &[String],
        inv: &[String],
        syms: Option<Syms<'g>>,
    ) -> Result<String> {
        let bound = region_args(index, carried, inv);
        let outs = self.inline(c, &bound, syms)?;
        let out = &outs
            .first()
            .ok_or_else(|| self.bad("a loop condition without output"))?
            .name;
        let dtype = c
            .outputs
            .first()
            .and_then(|id| c.node(*id))
            .map_or(DType::Bool, |node| node.dtype);
        Ok(self.bool_scalar(out, dtype))
    }

    /// The `Loop` body: inputs (iteration_num, cond_in, carried...), outputs (cond_out,
    /// carried...); the IR condition for the next index computes cond_out.
    fn loop_body(
        &mut self,
        n: &'g Node,
        l: &'g LoopSpec,
        inv: &[String],
        syms: RegionSyms<'g>,
    ) -> Result<GraphProto> {
        let outer = std::mem::take(&mut self.b.nodes);
        let res = self.body_nodes(n, l, inv, syms);
        let nodes = std::mem::replace(&mut self.b.nodes, outer);
        let (inputs, outputs) = res?;
        Ok(graph_proto("body", nodes, inputs, outputs))
    }

    fn body_nodes(
        &mut self,
        n: &'g Node,
        l: &'g LoopSpec,
        inv: &[String],
        (cond_syms, body_syms): RegionSyms<'g>,
    ) -> Result<(Vec<ValueInfoProto>, Vec<ValueInfoProto>)> {
        let iter = self.b.fresh("iter");
        let cond_in = self.b.fresh("cond_in");
        let mut inputs = vec![
            typed_value_info(&iter, DType::I64, &[]),
            typed_value_info(&cond_in, DType::Bool, &[]),
        ];
        let mut carried = Vec::with_capacity(l.carried);
        for k in 0..l.carried {
            let a = self.arg(n, k)?;
            let name = self.b.fresh("carried");
            let axes = self.dim_params(a.id);
            inputs.push(named_value_info(&name, a.dtype, a.shape, axes.as_ref()));
            carried.push(name);
        }
        let index = self.index_value(&iter, l.start, l.step);
        let bound = region_args(&index, &carried, inv);
        let next = self.inline(&l.body, &bound, body_syms)?;
        let names: Vec<String> = next.iter().map(|o| o.name.clone()).collect();
        let cond_out = match &l.cond {
            Some(c) => {
                let step = self.b.const_scalar(Scalar::Int(l.step), DType::I64);
                let next_index = self.b.op("Add", &[&index, &step], vec![]);
                self.cond_value(c, &next_index, &names, inv, cond_syms)?
            }
            None => cond_in.clone(),
        };
        let cond_name = self.b.fresh("cond_out");
        self.b
            .op_to("Identity", &[&cond_out], vec![], cond_name.clone());
        let mut outputs = vec![typed_value_info(&cond_name, DType::Bool, &[])];
        let next = next.get(..l.carried).unwrap_or(&next);
        outputs.extend(self.sub_outputs(&l.body, next)?);
        Ok((inputs, outputs))
    }

    /// `start + iter * step` as an int64 scalar (just `iter` for 0, 1).
    fn index_value(&mut self, iter: &str, start: i64, step: i64) -> String {
        if start == 0 && step == 1 {
            return iter.to_string();
        }
        let s = self.b.const_scalar(Scalar::Int(step), DType::I64);
        let o = self.b.const_scalar(Scalar::Int(start), DType::I64);
        let m = self.b.op("Mul", &[iter, &s], vec![]);
        self.b.op("Add", &[&m, &o], vec![])
    }
}

/// An output of a lowered region: its value name and, with symbolic sizes, the
/// `dim_param`s of its dims.
struct RegionOut {
    name: String,
    axes: Option<Vec<Option<String>>>,
}

/// The size information of a loop's condition and body regions.
type RegionSyms<'g> = (Option<Syms<'g>>, Option<Syms<'g>>);

/// The bound inputs of a loop region: `[index, carried..., invariant...]`.
fn region_args(index: &str, carried: &[String], inv: &[String]) -> Vec<String> {
    let mut v = Vec::with_capacity(1 + carried.len() + inv.len());
    v.push(index.to_string());
    v.extend(carried.iter().cloned());
    v.extend(inv.iter().cloned());
    v
}

fn graph_proto(
    name: &str,
    nodes: Vec<NodeProto>,
    input: Vec<ValueInfoProto>,
    output: Vec<ValueInfoProto>,
) -> GraphProto {
    GraphProto {
        node: nodes,
        name: name.to_string(),
        initializer: Vec::new(),
        doc_string: String::new(),
        input,
        output,
        value_info: Vec::new(),
    }
}
