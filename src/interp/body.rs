//! Function bodies: `return` and `if` at a body's top level give the function's result
//! straight back (no `Flow::Return` through `Interp::ret`, no nested block loop).
//!
//! Every other statement goes through `exec`, so loops, `try` and `with` keep their
//! general handling (a `return` inside them still passes through `Interp::ret`).

use super::tree::{St, StKind};
use super::value::Value;
use super::{at, Flow, Interp, R};

impl Interp {
    /// Runs a function body; its result (`None` when it ends without `return`).
    #[inline(always)]
    pub(crate) fn run_fn_body(&mut self, body: &[St]) -> R<Value> {
        for s in body {
            match &s.kind {
                StKind::Return(Some(e)) => return self.operand(e).map_err(|x| at(x, s.span)),
                // `if n < 2: return n`: a number comparison and a one-statement branch
                // here, without a `fn_stmt` frame
                StKind::If(c, then, orelse) => {
                    if let Some(t) = self.num_cond(c) {
                        let branch = if t { then } else { orelse };
                        if let [one] = branch.as_slice() {
                            if let StKind::Return(Some(e)) = &one.kind {
                                return self.operand(e).map_err(|x| at(x, one.span));
                            }
                        }
                        if !branch.is_empty() {
                            if let Some(v) = self.fn_branch(branch)? {
                                return Ok(v);
                            }
                        }
                        continue;
                    }
                }
                StKind::Return(None) => {}
                // other statements as `exec_block` runs them (no `fn_stmt` frame)
                _ => match self.exec(s)? {
                    Flow::Normal => continue,
                    f => return self.flow_result(f).map(Option::unwrap_or_default),
                },
            }
            if let Some(v) = self.fn_stmt(s)? {
                return Ok(v);
            }
        }
        Ok(Value::None)
    }

    /// The statements of the branch an `if` at a body's top level took.
    fn fn_branch(&mut self, branch: &[St]) -> R<Option<Value>> {
        for st in branch {
            match &st.kind {
                StKind::Return(Some(e)) => {
                    return self.operand(e).map(Some).map_err(|x| at(x, st.span))
                }
                StKind::If(..) | StKind::Return(None) => {
                    if let Some(v) = self.fn_stmt(st)? {
                        return Ok(Some(v));
                    }
                }
                _ => match self.exec(st)? {
                    Flow::Normal => {}
                    f => return self.flow_result(f),
                },
            }
        }
        Ok(None)
    }

    /// One statement of a function body's top level (or of an `if` branch there):
    /// `Some(result)` once the function returns.
    fn fn_stmt(&mut self, s: &St) -> R<Option<Value>> {
        match &s.kind {
            StKind::Return(e) => {
                let v = match e {
                    Some(e) => self.operand(e).map_err(|x| at(x, s.span))?,
                    None => Value::None,
                };
                Ok(Some(v))
            }
            StKind::If(c, body, orelse) => {
                let branch = match self.cond_or_traced(c).map_err(|x| at(x, s.span))? {
                    Ok(true) => body,
                    Ok(false) => orelse,
                    Err(t) => {
                        let f = self.exec_if_traced(&t, c.span, body, orelse, s.span);
                        return self.flow_result(f.map_err(|x| at(x, s.span))?);
                    }
                };
                self.fn_branch(branch)
            }
            _ => {
                let f = self.exec(s)?;
                self.flow_result(f)
            }
        }
    }

    /// The function's result after a statement that finished with `f`: the value of a
    /// `return` waits in `Interp::ret`; `break`/`continue` cannot leave a function body
    /// (the resolver rejects them outside loops), and end it with `None` if they did.
    #[inline]
    fn flow_result(&mut self, f: Flow) -> R<Option<Value>> {
        Ok(match f {
            Flow::Normal => None,
            Flow::Return => Some(std::mem::take(&mut self.ret)),
            Flow::Break | Flow::Continue => Some(Value::None),
        })
    }
}
