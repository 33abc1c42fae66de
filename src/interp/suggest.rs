//! "Did you mean" for uncaught NameError, AttributeError and ImportError, as CPython 3.12
//! prints them, and a note when the missing name is PyTorch API Kiln does not have yet.
//!
//! The raise sites only record what was missing ([`Missing`]); the candidates are listed
//! and compared when the error leaves the engine (`Interp::finish_error`), so a caught
//! error (`hasattr`, `getattr` with a default, `except AttributeError`) costs nothing more
//! and its `str(e)` stays CPython's.

use super::value::{Class, ModuleObj, Value};
use super::{Exc, Interp};
use crate::error::{Error, ErrorKind};
use std::rc::Rc;

/// What a NameError, AttributeError or ImportError was looking for.
#[derive(Debug, Clone)]
pub enum Missing {
    /// A global or builtin name, looked up from this module.
    Name(Rc<ModuleObj>, Rc<str>),
    /// `obj.name`.
    Attr(Value, Rc<str>),
    /// `from module import name`.
    Import(Rc<ModuleObj>, Rc<str>),
}

/// CPython's limits (Lib/traceback.py): no suggestion among more candidates than this, or
/// for a longer name.
const MAX_CANDIDATE_ITEMS: usize = 750;
const MAX_STRING_SIZE: usize = 40;
const MOVE_COST: usize = 2;
const CASE_COST: usize = 1;

/// PyTorch's public names as `namespace name` lines (see the file's header).
const PYTORCH_NAMES: &str = include_str!("pytorch_names.txt");

/// Records on `e` that it is the AttributeError of `obj.name` (other errors pass as they
/// are: an AttributeError raised inside a method or a `__getattr__` keeps its own text).
pub fn note_attr(mut e: Exc, obj: &Value, name: &str) -> Exc {
    let ours = e.error.kind == ErrorKind::AttributeError
        && e.missing.is_none()
        && e.error
            .message
            .ends_with(&format!("has no attribute '{name}'"));
    if ours {
        e.missing = Some(Missing::Attr(obj.clone(), name.into()));
    }
    e
}

/// Records on `e` what it is missing.
pub fn note(mut e: Exc, missing: Missing) -> Exc {
    e.missing = Some(missing);
    e
}

impl Interp {
    /// Appends `. Did you mean: 'x'?` (or the not-in-Kiln-yet note) to an uncaught error.
    pub fn add_suggestion(&self, error: &mut Error, missing: &Missing) {
        let (name, candidates, torch) = match missing {
            Missing::Name(m, n) => {
                let mut c: Vec<String> =
                    m.items().into_iter().map(|(k, _)| k.to_string()).collect();
                let mut b: Vec<String> = self.b.names.keys().map(|k| k.to_string()).collect();
                b.sort();
                c.extend(b);
                (n, c, torch_name(&["torch"], n))
            }
            Missing::Attr(obj, n) => (n, attr_names(obj), torch_attr(obj, n)),
            Missing::Import(m, n) => {
                let mut c: Vec<String> =
                    m.items().into_iter().map(|(k, _)| k.to_string()).collect();
                c.sort();
                (n, c, torch_module_name(&m.name, n))
            }
        };
        if let Some(full) = torch {
            error
                .message
                .push_str(&format!(". {full} is not available in Kiln yet"));
        } else if let Some(s) = closest(name, candidates.iter().map(String::as_str)) {
            error.message.push_str(&format!(". Did you mean: '{s}'?"));
        }
    }
}

/// The candidate closest to `name` by CPython's weighted Levenshtein distance, if one is
/// close enough (Python/suggestions.c, `calculate_suggestions`, the code CPython 3.11
/// prints tracebacks with): ties go to the earliest.
pub fn closest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let candidates: Vec<&str> = candidates.collect();
    if candidates.len() > MAX_CANDIDATE_ITEMS || name.chars().count() > MAX_STRING_SIZE {
        return None;
    }
    let wrong: Vec<char> = name.chars().collect();
    let mut best = usize::MAX;
    let mut suggestion = None;
    for cand in candidates {
        if cand == name {
            continue;
        }
        let c: Vec<char> = cand.chars().collect();
        let max = ((c.len() + wrong.len() + 3) * MOVE_COST / 6).min(best.saturating_sub(1));
        let d = distance(&wrong, &c, max);
        if d > max {
            continue;
        }
        if suggestion.is_none() || d < best {
            suggestion = Some(cand);
            best = d;
        }
    }
    suggestion
}

fn substitution_cost(a: char, b: char) -> usize {
    if a == b {
        0
    } else if a.to_lowercase().eq(b.to_lowercase()) {
        CASE_COST
    } else {
        MOVE_COST
    }
}

/// Levenshtein distance with moves costing 2 and case changes 1; above `max` it returns
/// `max + 1` (CPython's `levenshtein_distance`).
fn distance(a: &[char], b: &[char], max: usize) -> usize {
    if a == b {
        return 0;
    }
    let pre = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[pre..], &b[pre..]);
    let post = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (mut a, mut b) = (&a[..a.len() - post], &b[..b.len() - post]);
    if a.is_empty() || b.is_empty() {
        return MOVE_COST * (a.len() + b.len());
    }
    if a.len() > MAX_STRING_SIZE || b.len() > MAX_STRING_SIZE {
        return max + 1;
    }
    if b.len() < a.len() {
        std::mem::swap(&mut a, &mut b);
    }
    if (b.len() - a.len()) * MOVE_COST > max {
        return max + 1;
    }
    let mut row: Vec<usize> = (1..=a.len()).map(|i| i * MOVE_COST).collect();
    let mut result = 0;
    for (bi, &bc) in b.iter().enumerate() {
        let mut dist = bi * MOVE_COST;
        result = dist;
        let mut minimum = usize::MAX;
        for (ai, &ac) in a.iter().enumerate() {
            let substitute = dist + substitution_cost(bc, ac);
            dist = row[ai];
            result = (result.min(dist) + MOVE_COST).min(substitute);
            row[ai] = result;
            minimum = minimum.min(result);
        }
        if minimum > max {
            return max + 1;
        }
    }
    result
}

/// `namespace.name` when PyTorch has `name` in one of `namespaces`.
fn torch_name(namespaces: &[&str], name: &str) -> Option<String> {
    PYTORCH_NAMES
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(' '))
        .find(|(ns, n)| *n == name && namespaces.contains(ns))
        .map(|(ns, n)| format!("{ns}.{n}"))
}

/// The PyTorch name for a name missing from one of Kiln's modules that mirror PyTorch's.
fn torch_module_name(module: &str, name: &str) -> Option<String> {
    let namespaces: &[&str] = match module {
        "torch" => &["torch"],
        "nn" | "torch.nn" => &["nn", "nn.functional"],
        "functional" | "torch.nn.functional" => &["nn.functional"],
        "optim" | "torch.optim" => &["optim", "optim.lr_scheduler"],
        "linalg" | "torch.linalg" => &["torch.linalg"],
        _ => return None,
    };
    let found = torch_name(namespaces, name)?;
    Some(if found.starts_with("torch") {
        found
    } else {
        format!("torch.{found}")
    })
}

fn torch_attr(obj: &Value, name: &str) -> Option<String> {
    match obj {
        Value::Module(m) => torch_module_name(&m.name, name),
        Value::Tensor(_) => torch_name(&["Tensor"], name).map(|n| format!("torch.{n}")),
        _ => None,
    }
}

/// The attribute names `v.<name>` resolves to without running script code, sorted and
/// without duplicates: instance fields, class members (bases included), module members
/// and the methods of built-in types.
pub fn attr_names(v: &Value) -> Vec<String> {
    let mut names: Vec<String> = match v {
        Value::Instance(inst) => {
            let names = inst.attrs.borrow().names();
            let mut n: Vec<String> = names.iter().map(|k| k.to_string()).collect();
            n.extend(class_names(&inst.class));
            n
        }
        Value::Class(c) => class_names(c),
        Value::Module(m) => m.items().into_iter().map(|(k, _)| k.to_string()).collect(),
        other => builtin_method_names(other)
            .iter()
            .map(|s| s.to_string())
            .collect(),
    };
    names.sort();
    names.dedup();
    names
}

/// The member names of a class and its bases.
fn class_names(c: &Rc<Class>) -> Vec<String> {
    let mut names: Vec<String> = c.dict.borrow().keys().map(|k| k.to_string()).collect();
    for k in &c.mro {
        names.extend(k.dict.borrow().keys().map(|k| k.to_string()));
    }
    names
}

/// The methods of a built-in type's values (`"s".upper`, `xs.append`).
fn builtin_method_names(v: &Value) -> &'static [&'static str] {
    use super::builtins::{methods, seqmethods, tensor_methods};
    match v {
        Value::Str(_) => methods::STR_METHODS,
        Value::List(_) => seqmethods::LIST_METHODS,
        Value::Dict(_) => seqmethods::DICT_METHODS,
        Value::Set(_) => seqmethods::SET_METHODS,
        Value::FrozenSet(_) => seqmethods::FROZENSET_METHODS,
        Value::Tuple(_) => &["count", "index"],
        Value::Size(_) => &["count", "index", "numel"],
        Value::Tensor(_) => tensor_methods::TENSOR_METHODS.as_slice(),
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected picks from CPython 3.11: an object with these attributes, `o.<wrong>`
    /// uncaught, the traceback's `Did you mean` (none where it has none).
    #[test]
    fn closest_picks_like_cpython() {
        let names = [
            "Linear", "abc", "len", "print", "range", "softmax", "sorted", "sum", "weights",
        ];
        let pick = |n: &str| closest(n, names.iter().copied());
        for (wrong, want) in [
            ("prnt", Some("print")),
            ("sofmax", Some("softmax")),
            ("lne", None),
            ("x", None),
            ("linear", Some("Linear")),
            ("LINEAR", Some("Linear")),
            ("weight", Some("weights")),
            ("wieghts", Some("weights")),
            ("srt", None),
            ("rnage", Some("range")),
            ("xyz", None),
            ("ab", Some("abc")),
            ("Sum", Some("sum")),
            ("print", None),
        ] {
            assert_eq!(pick(wrong), want, "{wrong}");
        }
    }
}
