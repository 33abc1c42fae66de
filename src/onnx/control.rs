//! Lowering control nodes to ONNX: `If` -> `If` with then/else subgraphs, `Loop` ->
//! `Loop` (the IR condition region evaluated once before the loop and again at the end
//! of each body for the next iteration), `Out` -> one result name of its control node.
//! Regions read outer values through their bound inputs, which become the outer value
//! names (ONNX subgraphs see the enclosing scope). `Print` has no ONNX form: refused.

use super::builder::{attr_g, tensor_proto, unsupported};
use super::export::{typed_value_info, value_info};
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
        let then_g = self.subgraph("then", &b.then_g, &bound)?;
        let else_g = self.subgraph("else", &b.else_g, &bound)?;
        let outs: Vec<String> = (0..b.then_g.outputs.len())
            .map(|_| self.b.fresh("if_out"))
            .collect();
        let attrs = vec![attr_g("then_branch", then_g), attr_g("else_branch", else_g)];
        self.b.op_outs("If", &[&cond], attrs, outs.clone());
        Ok(outs)
    }

    /// A subgraph (no inputs) computing region `g` with bound inputs `bound`.
    fn subgraph(&mut self, name: &str, g: &'g Graph, bound: &[String]) -> Result<GraphProto> {
        let outer = std::mem::take(&mut self.b.nodes);
        let res = self
            .inline(g, bound)
            .and_then(|outs| self.sub_outputs(g, &outs));
        let nodes = std::mem::replace(&mut self.b.nodes, outer);
        Ok(graph_proto(name, nodes, Vec::new(), res?))
    }

    /// Identity nodes from region `g`'s output values to fresh subgraph output names.
    fn sub_outputs(&mut self, g: &Graph, outs: &[String]) -> Result<Vec<ValueInfoProto>> {
        let mut infos = Vec::with_capacity(outs.len());
        for (id, src) in g.outputs.iter().zip(outs) {
            let node = g
                .node(*id)
                .ok_or_else(|| self.bad("a dangling region output"))?;
            let name = self.b.fresh("sub_out");
            self.b.op_to("Identity", &[src], vec![], name.clone());
            infos.push(value_info(&name, node));
        }
        Ok(infos)
    }

    /// Lowers region `g` into the current node list with its inputs bound to `bound`
    /// (value names in slot order); returns the names of its outputs.
    fn inline(&mut self, g: &'g Graph, bound: &[String]) -> Result<Vec<String>> {
        let b = std::mem::take(&mut self.b);
        let mut lw = Lower::new(b, g, self.sources, self.at.clone());
        let res = lw.region_nodes(bound);
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
        let cond0 = match &l.cond {
            Some(c) => {
                let index = self.b.const_scalar(Scalar::Int(l.start), DType::I64);
                self.cond_value(c, &index, init, inv)?
            }
            None => String::new(),
        };
        let body = self.loop_body(n, l, inv)?;
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
    ) -> Result<String> {
        let bound = region_args(index, carried, inv);
        let outs = self.inline(c, &bound)?;
        let out = outs
            .first()
            .ok_or_else(|| self.bad("a loop condition without output"))?;
        let dtype = c
            .outputs
            .first()
            .and_then(|id| c.node(*id))
            .map_or(DType::Bool, |node| node.dtype);
        Ok(self.bool_scalar(out, dtype))
    }

    /// The `Loop` body: inputs (iteration_num, cond_in, carried...), outputs (cond_out,
    /// carried...); the IR condition for the next index computes cond_out.
    fn loop_body(&mut self, n: &'g Node, l: &'g LoopSpec, inv: &[String]) -> Result<GraphProto> {
        let outer = std::mem::take(&mut self.b.nodes);
        let res = self.body_nodes(n, l, inv);
        let nodes = std::mem::replace(&mut self.b.nodes, outer);
        let (inputs, outputs) = res?;
        Ok(graph_proto("body", nodes, inputs, outputs))
    }

    fn body_nodes(
        &mut self,
        n: &'g Node,
        l: &'g LoopSpec,
        inv: &[String],
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
            inputs.push(typed_value_info(&name, a.dtype, a.shape));
            carried.push(name);
        }
        let index = self.index_value(&iter, l.start, l.step);
        let next = self.inline(&l.body, &region_args(&index, &carried, inv))?;
        let cond_out = match &l.cond {
            Some(c) => {
                let step = self.b.const_scalar(Scalar::Int(l.step), DType::I64);
                let next_index = self.b.op("Add", &[&index, &step], vec![]);
                self.cond_value(c, &next_index, &next, inv)?
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
