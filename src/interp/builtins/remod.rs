//! The `re` module: `compile match search fullmatch findall finditer sub subn split
//! escape`, Pattern and Match objects with character (not byte) positions, flags
//! `I M S X A`, `re.error` for bad patterns. Python's `\1`/`\g<name>` replacement
//! templates are expanded here. Matching is `reengine`'s: the linear-time `regex` crate,
//! or `fancy-regex` for backreferences and lookaround (a search that backtracks past its
//! limit raises RuntimeError).

use super::convert::int_arg;
use super::mathmod::module;
use super::pyfuncs::{native_class, new_instance};
use super::reengine::{Engine, Flags, Spans};
use super::{arity, kwarg};
use crate::error::ErrorKind;
use crate::interp::value::{Class, ClassKind, DictMap, Key, ModuleObj, Value};
use crate::interp::{err, type_err, Interp, R};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

type Kw<'a> = &'a [(Rc<str>, Value)];

const IGNORECASE: i64 = 2;
const MULTILINE: i64 = 8;
const DOTALL: i64 = 16;
const VERBOSE: i64 = 64;
const ASCII: i64 = 256;

/// How a pattern is anchored for `search`, `match` and `fullmatch`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Anchor {
    None,
    Start,
    Full,
}

thread_local! {
    static CACHE: RefCell<HashMap<(String, i64, Anchor), Rc<Engine>>> = RefCell::new(HashMap::new());
    static PATTERN: Rc<Class> = native_class("Pattern", &[
        ("match", p_match), ("search", p_search), ("fullmatch", p_fullmatch),
        ("findall", p_findall), ("finditer", p_finditer), ("sub", p_sub), ("subn", p_subn),
        ("split", p_split), ("__repr__", p_repr),
    ]);
    static MATCH: Rc<Class> = native_class("Match", &[
        ("group", m_group), ("groups", m_groups), ("groupdict", m_groupdict),
        ("span", m_span), ("start", m_start), ("end", m_end),
        ("__getitem__", m_getitem), ("__repr__", m_repr),
    ]);
}

pub fn re_module(me: &Interp) -> Rc<ModuleObj> {
    let m = module(
        "re",
        &[
            ("compile", compile),
            ("match", f_match),
            ("search", f_search),
            ("fullmatch", f_fullmatch),
            ("findall", f_findall),
            ("finditer", f_finditer),
            ("sub", f_sub),
            ("subn", f_subn),
            ("split", f_split),
            ("escape", escape),
            ("purge", purge),
        ],
        &[
            ("IGNORECASE", Value::Int(IGNORECASE)),
            ("I", Value::Int(IGNORECASE)),
            ("MULTILINE", Value::Int(MULTILINE)),
            ("M", Value::Int(MULTILINE)),
            ("DOTALL", Value::Int(DOTALL)),
            ("S", Value::Int(DOTALL)),
            ("VERBOSE", Value::Int(VERBOSE)),
            ("X", Value::Int(VERBOSE)),
            ("ASCII", Value::Int(ASCII)),
            ("A", Value::Int(ASCII)),
            ("NOFLAG", Value::Int(0)),
        ],
    );
    let base = me.b.exc_class(ErrorKind::ValueError);
    let error = super::new_class("error", Some(base), ClassKind::User);
    m.set(&"error".into(), Value::Class(error));
    m
}

/// Raises `re.error(msg)`.
fn re_error(me: &mut Interp, msg: String) -> crate::interp::Exc {
    let cls = match &me.import(&["re".into()]).map(|m| m.get("error")) {
        Ok(Some(Value::Class(c))) => c.clone(),
        _ => return err(ErrorKind::ValueError, msg),
    };
    let v = crate::interp::exc::new_exc_instance(&cls, vec![Value::str(&msg)]);
    match me.exc_from_value(v) {
        Ok(e) | Err(e) => e,
    }
}

/// Python pattern syntax the `regex` crate spells differently (`\Z`).
fn translate(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    let mut cs = p.chars();
    while let Some(c) = cs.next() {
        if c == '\\' {
            match cs.next() {
                Some('Z') => out.push_str("\\z"),
                Some(n) => {
                    out.push('\\');
                    out.push(n);
                }
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn regex_for(me: &mut Interp, pat: &str, flags: i64, anchor: Anchor) -> R<Rc<Engine>> {
    let key = (pat.to_string(), flags, anchor);
    if let Some(r) = CACHE.with(|c| c.borrow().get(&key).cloned()) {
        return Ok(r);
    }
    let body = translate(pat);
    let src = match anchor {
        Anchor::None => body,
        Anchor::Start => format!("\\A(?:{body})"),
        Anchor::Full => format!("\\A(?:{body})\\z"),
    };
    let built = Engine::new(
        &src,
        Flags {
            ignore_case: flags & IGNORECASE != 0,
            multi_line: flags & MULTILINE != 0,
            dot_all: flags & DOTALL != 0,
            verbose: flags & VERBOSE != 0,
            unicode: flags & ASCII == 0,
        },
    );
    match built {
        Ok(r) => {
            let r = Rc::new(r);
            CACHE.with(|c| {
                let mut c = c.borrow_mut();
                if c.len() > 512 {
                    c.clear();
                }
                c.insert(key, r.clone());
            });
            Ok(r)
        }
        Err(e) => Err(re_error(me, e)),
    }
}

/// The (pattern, flags) a pattern argument names: a str or a compiled Pattern.
fn pat_of(v: &Value, flags: i64) -> R<(String, i64)> {
    match v {
        Value::Str(s) => Ok((s.to_string(), flags)),
        Value::Instance(i) => match (i.attr("pattern"), i.attr("flags")) {
            (Some(Value::Str(ref p)), Some(Value::Int(f))) => Ok((p.to_string(), f | flags)),
            _ => Err(type_err(
                "first argument must be string or compiled pattern",
            )),
        },
        _ => Err(type_err(
            "first argument must be string or compiled pattern",
        )),
    }
}

fn str_of(v: &Value) -> R<&Rc<str>> {
    match v {
        Value::Str(s) => Ok(s),
        v => Err(type_err(format!(
            "expected string or bytes-like object, got '{}'",
            v.type_name()
        ))),
    }
}

fn flags_arg(args: &[Value], at: usize, kw: Kw) -> R<i64> {
    match args.get(at).or_else(|| kwarg(kw, "flags")) {
        Some(v) => int_arg(v, ""),
        None => Ok(0),
    }
}

fn pattern_obj(pat: &str, flags: i64, r: &Engine) -> Value {
    let mut idx = DictMap::default();
    for (i, n) in r.names().into_iter().enumerate() {
        if let Some(n) = n {
            idx.insert(Key(Value::str(&n)), Value::Int(i as i64));
        }
    }
    new_instance(
        PATTERN.with(|c| c.clone()),
        &[
            ("pattern", Value::str(pat)),
            (
                "flags",
                Value::Int(flags | if flags & ASCII == 0 { 32 } else { 0 }),
            ),
            ("groups", Value::Int(r.captures_len() as i64 - 1)),
            ("groupindex", Value::Dict(Rc::new(RefCell::new(idx)))),
        ],
    )
}

fn compile(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    arity("compile", args, 1, 2)?;
    if let Value::Instance(_) = &args[0] {
        return Ok(args[0].clone());
    }
    let (p, f) = pat_of(&args[0], flags_arg(args, 1, kw)?)?;
    let r = regex_for(me, &p, f, Anchor::None)?;
    Ok(pattern_obj(&p, f, &r))
}

/// Character offset of a byte offset.
fn chars_at(s: &str, b: usize) -> i64 {
    if s.is_ascii() {
        b as i64
    } else {
        s[..b].chars().count() as i64
    }
}

/// Byte offset of a character position (clamped).
fn byte_at(s: &str, c: i64) -> usize {
    if c <= 0 {
        return 0;
    }
    if s.is_ascii() {
        return (c as usize).min(s.len());
    }
    s.char_indices().nth(c as usize).map_or(s.len(), |(b, _)| b)
}

fn match_obj(s: &Rc<str>, caps: &Spans, r: &Engine, pat: &Value) -> Value {
    let spans: Vec<Value> = caps
        .iter()
        .map(|m| match m {
            Some((a, b)) => Value::tuple(vec![
                Value::Int(chars_at(s, *a)),
                Value::Int(chars_at(s, *b)),
            ]),
            None => Value::None,
        })
        .collect();
    let names: Vec<Value> = r
        .names()
        .into_iter()
        .map(|n| n.map_or(Value::None, |n| Value::str(&n)))
        .collect();
    new_instance(
        MATCH.with(|c| c.clone()),
        &[
            ("string", Value::Str(s.clone())),
            ("re", pat.clone()),
            ("_spans", Value::tuple(spans)),
            ("_names", Value::tuple(names)),
        ],
    )
}

/// Shared body of search/match/fullmatch (module function or Pattern method).
fn do_find(
    me: &mut Interp,
    pat: &Value,
    flags: i64,
    s: &Value,
    anchor: Anchor,
    pos: Option<&Value>,
) -> R<Value> {
    let (p, f) = pat_of(pat, flags)?;
    let s = str_of(s)?.clone();
    let r = regex_for(me, &p, f, anchor)?;
    let start = match pos {
        Some(v) => byte_at(&s, int_arg(v, "")?),
        None => 0,
    };
    let hay = &s[..];
    let caps = if start == 0 || anchor == Anchor::None {
        r.captures_at(hay, start).map_err(exhausted)?
    } else {
        // anchored at `pos`: match against the tail, then shift the spans
        return match r.captures_at(&hay[start..], 0).map_err(exhausted)? {
            Some(c) => {
                let tail: Rc<str> = Rc::from(&hay[start..]);
                let m = match_obj(&tail, &c, &r, pat);
                shift(&m, chars_at(hay, start), &s);
                Ok(m)
            }
            None => Ok(Value::None),
        };
    };
    Ok(match caps {
        Some(c) => match_obj(&s, &c, &r, pat),
        None => Value::None,
    })
}

/// A search the backtracking engine gave up on.
fn exhausted(e: super::reengine::Exhausted) -> crate::interp::Exc {
    err(
        ErrorKind::RuntimeError,
        format!(
            "regular expression search gave up: {} (the pattern backtracks catastrophically on this input)",
            e.0
        ),
    )
}

/// Moves a match's spans by `by` characters and points it at the whole string.
fn shift(m: &Value, by: i64, s: &Rc<str>) {
    if let Value::Instance(i) = m {
        let spans = i.attr("_spans");
        if let Some(Value::Tuple(t)) = &spans {
            let moved: Vec<Value> = t
                .iter()
                .map(|v| match v {
                    Value::Tuple(p) => match (&p[0], &p[1]) {
                        (Value::Int(a), Value::Int(b)) => {
                            Value::tuple(vec![Value::Int(a + by), Value::Int(b + by)])
                        }
                        _ => v.clone(),
                    },
                    _ => v.clone(),
                })
                .collect();
            i.put_attr("_spans", Value::tuple(moved));
            i.put_attr("string", Value::Str(s.clone()));
        }
    }
}

macro_rules! finder {
    ($f:ident, $m:ident, $anchor:expr, $name:literal) => {
        fn $f(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
            arity($name, args, 2, 3)?;
            let flags = flags_arg(args, 2, kw)?;
            do_find(me, &args[0], flags, &args[1], $anchor, None)
        }
        fn $m(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
            arity($name, args, 2, 3)?;
            let pos = args.get(2).or_else(|| kwarg(kw, "pos"));
            do_find(me, &args[0], 0, &args[1], $anchor, pos)
        }
    };
}

finder!(f_match, p_match, Anchor::Start, "match");
finder!(f_search, p_search, Anchor::None, "search");
finder!(f_fullmatch, p_fullmatch, Anchor::Full, "fullmatch");

/// All non-overlapping matches as match objects.
fn all_matches(me: &mut Interp, pat: &Value, flags: i64, s: &Value) -> R<Vec<Value>> {
    let (p, f) = pat_of(pat, flags)?;
    let s = str_of(s)?.clone();
    let r = regex_for(me, &p, f, Anchor::None)?;
    let all = r.captures_all(&s).map_err(exhausted)?;
    Ok(all.iter().map(|c| match_obj(&s, c, &r, pat)).collect())
}

fn findall_of(me: &mut Interp, pat: &Value, flags: i64, s: &Value) -> R<Value> {
    let ms = all_matches(me, pat, flags, s)?;
    let mut out = Vec::with_capacity(ms.len());
    for m in &ms {
        let n = spans(m).len();
        let text = |g: usize| group_text(m, g).unwrap_or_else(|| Value::str(""));
        out.push(match n {
            1 => text(0),
            2 => text(1),
            _ => Value::tuple((1..n).map(text).collect()),
        });
    }
    Ok(Value::list(out))
}

fn f_findall(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    arity("findall", args, 2, 3)?;
    let flags = flags_arg(args, 2, kw)?;
    findall_of(me, &args[0], flags, &args[1])
}

fn p_findall(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("findall", args, 2, 2)?;
    findall_of(me, &args[0], 0, &args[1])
}

fn f_finditer(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    arity("finditer", args, 2, 3)?;
    let flags = flags_arg(args, 2, kw)?;
    let ms = all_matches(me, &args[0], flags, &args[1])?;
    me.get_iter(&Value::list(ms))
}

fn p_finditer(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    f_finditer(me, &args[..2.min(args.len())], kw)
}

fn spans(m: &Value) -> Vec<Value> {
    match m {
        Value::Instance(i) => match i.attr("_spans") {
            Some(Value::Tuple(ref t)) => t.to_vec(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

fn span_of(m: &Value, g: usize) -> Option<(i64, i64)> {
    match spans(m).get(g) {
        Some(Value::Tuple(p)) => match (&p[0], &p[1]) {
            (Value::Int(a), Value::Int(b)) => Some((*a, *b)),
            _ => None,
        },
        _ => None,
    }
}

fn group_text(m: &Value, g: usize) -> Option<Value> {
    let (a, b) = span_of(m, g)?;
    let Value::Instance(i) = m else { return None };
    let s = match i.attr("string") {
        Some(Value::Str(ref s)) => s.clone(),
        _ => return None,
    };
    let (x, y) = (byte_at(&s, a), byte_at(&s, b));
    Some(Value::str(&s[x..y]))
}

/// A group number from an int or a group name.
fn group_index(me: &mut Interp, m: &Value, g: &Value) -> R<usize> {
    let n = spans(m).len();
    let bad = |_: &mut Interp| err(ErrorKind::IndexError, "no such group");
    match g {
        Value::Int(i) if *i >= 0 && (*i as usize) < n => Ok(*i as usize),
        Value::Str(name) => {
            if let Value::Instance(i) = m {
                if let Some(Value::Tuple(ref names)) = i.attr("_names") {
                    for (k, v) in names.iter().enumerate() {
                        if matches!(v, Value::Str(s) if **s == **name) {
                            return Ok(k);
                        }
                    }
                }
            }
            Err(bad(me))
        }
        _ => Err(bad(me)),
    }
}

fn m_group(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    let m = &args[0];
    if args.len() <= 1 {
        return Ok(group_text(m, 0).unwrap_or(Value::None));
    }
    let mut out = Vec::new();
    for g in &args[1..] {
        let i = group_index(me, m, g)?;
        out.push(group_text(m, i).unwrap_or(Value::None));
    }
    Ok(if out.len() == 1 {
        out.pop().unwrap_or(Value::None)
    } else {
        Value::tuple(out)
    })
}

fn m_getitem(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    arity("__getitem__", args, 2, 2)?;
    m_group(me, args, kw)
}

fn m_groups(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let dflt = args.get(1).or_else(|| kwarg(kw, "default")).cloned();
    let m = &args[0];
    let n = spans(m).len();
    Ok(Value::tuple(
        (1..n)
            .map(|g| group_text(m, g).unwrap_or_else(|| dflt.clone().unwrap_or(Value::None)))
            .collect(),
    ))
}

fn m_groupdict(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let dflt = args.get(1).or_else(|| kwarg(kw, "default")).cloned();
    let m = &args[0];
    let mut d = DictMap::default();
    if let Value::Instance(i) = m {
        let names = i.attr("_names");
        if let Some(Value::Tuple(names)) = &names {
            for (k, v) in names.iter().enumerate() {
                if let Value::Str(_) = v {
                    let t = group_text(m, k).unwrap_or_else(|| dflt.clone().unwrap_or(Value::None));
                    d.insert(Key(v.clone()), t);
                }
            }
        }
    }
    Ok(Value::Dict(Rc::new(RefCell::new(d))))
}

fn span_parts(me: &mut Interp, args: &[Value]) -> R<(i64, i64)> {
    let g = match args.get(1) {
        Some(g) => group_index(me, &args[0], g)?,
        None => 0,
    };
    Ok(span_of(&args[0], g).unwrap_or((-1, -1)))
}

fn m_span(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    let (a, b) = span_parts(me, args)?;
    Ok(Value::tuple(vec![Value::Int(a), Value::Int(b)]))
}

fn m_start(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    Ok(Value::Int(span_parts(me, args)?.0))
}

fn m_end(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    Ok(Value::Int(span_parts(me, args)?.1))
}

fn m_repr(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    let (a, b) = span_of(&args[0], 0).unwrap_or((-1, -1));
    let t = group_text(&args[0], 0).unwrap_or(Value::None);
    let t = me.repr(&t)?;
    Ok(Value::str(&format!(
        "<re.Match object; span=({a}, {b}), match={t}>"
    )))
}

fn p_repr(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    let p = match &args[0] {
        Value::Instance(i) => i.attr("pattern").unwrap_or(Value::None),
        _ => Value::None,
    };
    Ok(Value::str(&format!("re.compile({})", me.repr(&p)?)))
}

/// Expands a Python replacement template (`\1`, `\g<name>`, `\n`) for one match.
fn expand(me: &mut Interp, tmpl: &str, m: &Value) -> R<String> {
    let mut out = String::new();
    let mut cs = tmpl.chars().peekable();
    while let Some(c) = cs.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let g: Value = match cs.next() {
            Some('n') => {
                out.push('\n');
                continue;
            }
            Some('t') => {
                out.push('\t');
                continue;
            }
            Some('r') => {
                out.push('\r');
                continue;
            }
            Some('\\') => {
                out.push('\\');
                continue;
            }
            Some('g') => {
                if cs.next() != Some('<') {
                    return Err(re_error(me, "missing <".into()));
                }
                let mut name = String::new();
                loop {
                    match cs.next() {
                        Some('>') => break,
                        Some(ch) => name.push(ch),
                        None => return Err(re_error(me, "missing >, unterminated name".into())),
                    }
                }
                match name.parse::<i64>() {
                    Ok(i) => Value::Int(i),
                    Err(_) => Value::str(&name),
                }
            }
            Some(d) if d.is_ascii_digit() => {
                let mut n = d.to_digit(10).unwrap_or(0) as i64;
                if let Some(e) = cs.peek().and_then(|e| e.to_digit(10)) {
                    cs.next();
                    n = n * 10 + e as i64;
                }
                Value::Int(n)
            }
            Some(other) => {
                out.push('\\');
                out.push(other);
                continue;
            }
            None => return Err(re_error(me, "bad escape (end of pattern)".into())),
        };
        let Ok(i) = group_index(me, m, &g) else {
            let shown = me.repr(&g)?;
            return Err(re_error(me, format!("invalid group reference {shown}")));
        };
        if let Some(Value::Str(t)) = &group_text(m, i) {
            out.push_str(t);
        }
    }
    Ok(out)
}

fn subn_of(
    me: &mut Interp,
    pat: &Value,
    repl: &Value,
    s: &Value,
    count: i64,
    flags: i64,
) -> R<(String, i64)> {
    let text = str_of(s)?.clone();
    let ms = all_matches(me, pat, flags, s)?;
    let mut out = String::new();
    let mut last = 0usize;
    let mut n = 0i64;
    for m in &ms {
        if count > 0 && n >= count {
            break;
        }
        let (a, b) = span_of(m, 0).unwrap_or((0, 0));
        let (a, b) = (byte_at(&text, a), byte_at(&text, b));
        out.push_str(&text[last..a]);
        match repl {
            Value::Str(t) => out.push_str(&expand(me, t, m)?),
            f => {
                let r = me.call_value(f, vec![m.clone()], vec![])?;
                out.push_str(&me.str_of(&r)?);
            }
        }
        last = b;
        n += 1;
    }
    out.push_str(&text[last..]);
    Ok((out, n))
}

fn sub_args(args: &[Value], kw: Kw, base: usize) -> R<(i64, i64)> {
    let count = match args.get(base).or_else(|| kwarg(kw, "count")) {
        Some(v) => int_arg(v, "")?,
        None => 0,
    };
    Ok((count, flags_arg(args, base + 1, kw)?))
}

fn f_sub(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    arity("sub", args, 3, 5)?;
    let (count, flags) = sub_args(args, kw, 3)?;
    Ok(Value::str(
        &subn_of(me, &args[0], &args[1], &args[2], count, flags)?.0,
    ))
}

fn f_subn(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    arity("subn", args, 3, 5)?;
    let (count, flags) = sub_args(args, kw, 3)?;
    let (s, n) = subn_of(me, &args[0], &args[1], &args[2], count, flags)?;
    Ok(Value::tuple(vec![Value::str(&s), Value::Int(n)]))
}

fn p_sub(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    arity("sub", args, 3, 4)?;
    let (count, _) = sub_args(args, kw, 3)?;
    Ok(Value::str(
        &subn_of(me, &args[0], &args[1], &args[2], count, 0)?.0,
    ))
}

fn p_subn(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    arity("subn", args, 3, 4)?;
    let (count, _) = sub_args(args, kw, 3)?;
    let (s, n) = subn_of(me, &args[0], &args[1], &args[2], count, 0)?;
    Ok(Value::tuple(vec![Value::str(&s), Value::Int(n)]))
}

fn split_of(me: &mut Interp, pat: &Value, s: &Value, maxsplit: i64, flags: i64) -> R<Value> {
    let text = str_of(s)?.clone();
    let ms = all_matches(me, pat, flags, s)?;
    let mut out = Vec::new();
    let mut last = 0usize;
    for (n, m) in ms.iter().enumerate() {
        if maxsplit > 0 && n as i64 >= maxsplit {
            break;
        }
        let (a, b) = span_of(m, 0).unwrap_or((0, 0));
        let (a, b) = (byte_at(&text, a), byte_at(&text, b));
        out.push(Value::str(&text[last..a]));
        for g in 1..spans(m).len() {
            out.push(group_text(m, g).unwrap_or(Value::None));
        }
        last = b;
    }
    out.push(Value::str(&text[last..]));
    Ok(Value::list(out))
}

fn f_split(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    arity("split", args, 2, 4)?;
    let (maxsplit, flags) = match args.get(2).or_else(|| kwarg(kw, "maxsplit")) {
        Some(v) => (int_arg(v, "")?, flags_arg(args, 3, kw)?),
        None => (0, flags_arg(args, 3, kw)?),
    };
    split_of(me, &args[0], &args[1], maxsplit, flags)
}

fn p_split(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    arity("split", args, 2, 3)?;
    let maxsplit = match args.get(2).or_else(|| kwarg(kw, "maxsplit")) {
        Some(v) => int_arg(v, "")?,
        None => 0,
    };
    split_of(me, &args[0], &args[1], maxsplit, 0)
}

/// `re.escape`: a backslash before each character special in a pattern (CPython 3.7+).
fn escape(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("escape", args, 1, 1)?;
    let s = str_of(&args[0])?;
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "()[]{}?*+-|^$\\.&~# \t\n\r\x0b\x0c".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    Ok(Value::str(&out))
}

fn purge(_: &mut Interp, _: &[Value], _: Kw) -> R<Value> {
    CACHE.with(|c| c.borrow_mut().clear());
    Ok(Value::None)
}
