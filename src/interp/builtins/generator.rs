//! `generator=`: a `torch.Generator` (stdlib data.Generator, whose `_state` is the
//! list of its mt19937 words and `_normal` the cached second normal draw) stands in for
//! this thread's stream while one call draws, so `rand(3, generator=g)`,
//! `t.normal_(generator=g)`, `multinomial(p, 2, generator=g)` and the rest give the
//! numbers torch's do for a `torch.Generator().manual_seed(s)`, and the thread's own
//! stream is left as it was.

use super::tensor::Kw;
use crate::interp::value::Value;
use crate::interp::{type_err, R};
use crate::tensor::random::{self, Mt19937, Rng};

/// The `generator=` keyword of a call (absent or None: the thread's stream).
pub fn of_kw<'a>(kw: Kw<'a>) -> Option<&'a Value> {
    super::kwarg(kw, "generator").filter(|g| !matches!(g, Value::None))
}

/// Runs `f` drawing from `generator` (None: this thread's stream), writing the
/// generator's advanced state back after.
pub fn with_generator<T>(generator: Option<&Value>, fname: &str, f: impl FnOnce() -> R<T>) -> R<T> {
    let Some(g) = generator.filter(|g| !matches!(g, Value::None)) else {
        return f();
    };
    let bad = || {
        type_err(format!(
            "{fname}(): argument 'generator' must be torch.Generator, not {}",
            g.type_name()
        ))
    };
    let Value::Instance(inst) = g else {
        return Err(bad());
    };
    let state = inst.attr("_state");
    let Some(Value::List(words)) = &state else {
        return Err(bad());
    };
    let ints: Option<Vec<i64>> = words
        .borrow()
        .iter()
        .map(|v| match v {
            Value::Int(i) => Some(*i),
            _ => None,
        })
        .collect();
    let engine = ints.and_then(|w| Mt19937::from_words(&w)).ok_or_else(bad)?;
    let normal = match inst.attr("_normal") {
        Some(Value::Float(x)) => Some(x),
        _ => None,
    };
    // the generator's state lives in a Python object: a compiled graph cannot draw it
    crate::ir::record::graph_break(crate::ir::record::BreakReason::Random("a torch.Generator"));
    let own = random::save_rng();
    random::restore_rng(Rng::from_parts(engine, normal));
    let out = f();
    let used = random::save_rng();
    random::restore_rng(own);
    *words.borrow_mut() = used.torch.to_words().into_iter().map(Value::Int).collect();
    inst.put_attr(
        "_normal",
        used.next_normal().map_or(Value::None, Value::Float),
    );
    out
}
