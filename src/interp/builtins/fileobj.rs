//! `open()` and text-mode file objects (modes r w a x with `+`), universal newlines on
//! read, UTF-8; every file-system access of the Python-library modules goes through
//! `fs_gate`, which refuses it in a sandboxed engine.

use super::{arity, kwarg, no_kw};
use crate::error::ErrorKind;
use crate::interp::value::{Class, Instance, Value};
use crate::interp::{err, type_err, value_err, Exc, Interp, R};
use std::io::Write;
use std::rc::Rc;

type Kw<'a> = &'a [(Rc<str>, Value)];

/// The one gate in front of the Python-library file functions (`open`, `os`,
/// `pathlib`): a sandboxed engine raises PermissionError.
pub fn fs_gate(me: &Interp, what: &str) -> R<()> {
    use crate::io::fs_gate;
    if !me.allow_fs {
        return Err(super::tensor::te(fs_gate::call_refused(what)));
    }
    fs_gate::check_call(what).map_err(super::tensor::te)
}

/// A `std::io::Error` as the OSError subclass and message CPython raises
/// (`[Errno 2] No such file or directory: 'x'`).
pub fn os_error(e: &std::io::Error, path: &str) -> Exc {
    use std::io::ErrorKind as K;
    let kind = match e.kind() {
        K::NotFound => ErrorKind::FileNotFoundError,
        K::AlreadyExists => ErrorKind::FileExistsError,
        K::PermissionDenied => ErrorKind::PermissionError,
        K::IsADirectory => ErrorKind::IsADirectoryError,
        K::NotADirectory => ErrorKind::NotADirectoryError,
        _ => ErrorKind::OSError,
    };
    let text = e.to_string();
    let text = match text.find(" (os error") {
        Some(i) => &text[..i],
        None => &text,
    };
    let path = crate::pyfmt::str_repr(path);
    match e.raw_os_error() {
        Some(n) => err(kind, format!("[Errno {n}] {text}: {path}")),
        None => err(kind, format!("{text}: {path}")),
    }
}

thread_local! {
    static FILE_CLASS: Rc<Class> = file_class();
}

fn file_class() -> Rc<Class> {
    let methods: &[(&str, super::NativeImpl)] = &[
        ("read", read),
        ("readline", readline),
        ("readlines", readlines),
        ("write", write),
        ("writelines", writelines),
        ("seek", seek),
        ("tell", tell),
        ("close", close),
        ("flush", flush),
        ("readable", readable),
        ("writable", writable),
        ("__enter__", enter),
        ("__exit__", exit),
        ("__iter__", enter),
        ("__next__", next),
        ("__repr__", repr),
    ];
    super::pyfuncs::native_class("TextIOWrapper", methods)
}

/// What an open file may do, from its mode string.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Read,
    Write,
    Append,
    Create,
}

fn parse_mode(mode: &str) -> R<(Mode, bool)> {
    let bad = || value_err(format!("invalid mode: '{mode}'"));
    let mut kind = None;
    let mut plus = false;
    for c in mode.chars() {
        let k = match c {
            'r' => Mode::Read,
            'w' => Mode::Write,
            'a' => Mode::Append,
            'x' => Mode::Create,
            '+' if !plus => {
                plus = true;
                continue;
            }
            't' => continue,
            'b' => {
                return Err(value_err(
                    "binary mode is not supported (Kiln has no bytes type)",
                ))
            }
            _ => return Err(bad()),
        };
        if kind.replace(k).is_some() {
            return Err(value_err(
                "must have exactly one of create/read/write/append mode",
            ));
        }
    }
    let kind = kind.ok_or_else(|| {
        value_err("Must have exactly one of create/read/write/append mode and at most one plus")
    })?;
    Ok((kind, plus))
}

/// Text as read: `\r\n` and `\r` become `\n` unless `newline=''` was given.
fn universal(s: String, translate: bool) -> String {
    if translate && s.contains('\r') {
        s.replace("\r\n", "\n").replace('\r', "\n")
    } else {
        s
    }
}

/// `open(file, mode='r', buffering=-1, encoding=None, errors=None, newline=None)`.
pub fn open(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    arity("open", args, 1, 3)?;
    no_kw(
        "open",
        kw,
        &["file", "mode", "buffering", "encoding", "errors", "newline"],
    )?;
    let path = match &args[0] {
        Value::Str(s) => s.to_string(),
        Value::Instance(_) => me.str_of(&args[0])?,
        v => {
            return Err(type_err(format!(
                "expected str, bytes or os.PathLike object, not {}",
                v.type_name()
            )))
        }
    };
    let mode = match args.get(1).or_else(|| kwarg(kw, "mode")) {
        Some(Value::Str(s)) => s.to_string(),
        None => "r".into(),
        Some(v) => {
            return Err(type_err(format!(
                "open() argument 'mode' must be str, not {}",
                v.type_name()
            )))
        }
    };
    let encoding = match kwarg(kw, "encoding") {
        Some(Value::Str(e)) => {
            let norm = e.to_ascii_lowercase().replace('_', "-");
            if norm != "utf-8" && norm != "utf8" && norm != "ascii" {
                return Err(value_err(format!(
                    "unknown encoding: {e} (Kiln reads and writes UTF-8 only)"
                )));
            }
            e.to_string()
        }
        _ => "UTF-8".into(),
    };
    let translate = !matches!(kwarg(kw, "newline"), Some(Value::Str(s)) if s.is_empty());
    let (kind, plus) = parse_mode(&mode)?;
    fs_gate(me, "open()")?;
    let oe = |e: std::io::Error| os_error(&e, &path);
    if std::path::Path::new(&path).is_dir() {
        return Err(err(
            ErrorKind::IsADirectoryError,
            format!(
                "[Errno 21] Is a directory: {}",
                crate::pyfmt::str_repr(&path)
            ),
        ));
    }
    let read_text = |p: &str| -> R<String> {
        let bytes = std::fs::read(p).map_err(oe)?;
        let s = String::from_utf8(bytes).map_err(|e| {
            err(
                ErrorKind::ValueError,
                format!(
                    "'utf-8' codec can't decode byte 0x{:02x} in position {}: invalid start byte",
                    e.as_bytes()[e.utf8_error().valid_up_to()],
                    e.utf8_error().valid_up_to()
                ),
            )
        })?;
        Ok(universal(s, translate))
    };
    let (buf, pos) = match kind {
        Mode::Read => (Some(read_text(&path)?), 0),
        Mode::Write => {
            std::fs::File::create(&path).map_err(oe)?;
            (plus.then(String::new), 0)
        }
        Mode::Create => {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(oe)?;
            (plus.then(String::new), 0)
        }
        Mode::Append => {
            std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(&path)
                .map_err(oe)?;
            let len = std::fs::metadata(&path).map_err(oe)?.len() as i64;
            if plus {
                let t = read_text(&path)?;
                let n = t.len() as i64;
                (Some(t), n)
            } else {
                (None, len)
            }
        }
    };
    let inst = Instance::new(FILE_CLASS.with(|c| c.clone()));
    {
        let mut d = inst.attrs.borrow_mut();
        d.set("name".into(), args[0].clone());
        d.set("mode".into(), Value::str(&mode));
        d.set("encoding".into(), Value::str(&encoding));
        d.set("closed".into(), Value::Bool(false));
        d.set("_path".into(), Value::str(&path));
        d.set("_buf".into(), buf.map_or(Value::None, |b| Value::str(&b)));
        d.set("_pos".into(), Value::Int(pos));
        d.set("_readable".into(), Value::Bool(kind == Mode::Read || plus));
        d.set("_writable".into(), Value::Bool(kind != Mode::Read || plus));
        d.set("_append".into(), Value::Bool(kind == Mode::Append));
    }
    let inst = Rc::new(inst);
    crate::interp::gc::track_instance(&inst);
    Ok(Value::Instance(inst))
}

/// The file object behind `self`, checked open.
fn this<'a>(args: &'a [Value], what: &str) -> R<&'a Rc<Instance>> {
    match args.first() {
        Some(Value::Instance(i)) if Rc::ptr_eq(&i.class, &FILE_CLASS.with(|c| c.clone())) => {
            if matches!(i.attr("closed"), Some(Value::Bool(true))) {
                return Err(value_err("I/O operation on closed file."));
            }
            Ok(i)
        }
        _ => Err(type_err(format!("{what}() needs a file object"))),
    }
}

fn get(i: &Instance, k: &str) -> Value {
    i.attr(k).unwrap_or(Value::None)
}

fn set(i: &Instance, k: &str, v: Value) {
    i.put_attr(k, v);
}

fn flag(i: &Instance, k: &str) -> bool {
    matches!(get(i, k), Value::Bool(true))
}

/// The readable text and the current byte position in it.
fn text(i: &Instance) -> R<(Rc<str>, usize)> {
    if !flag(i, "_readable") {
        return Err(err(ErrorKind::OSError, "not readable"));
    }
    let Value::Str(s) = &get(i, "_buf") else {
        return Err(err(ErrorKind::OSError, "not readable"));
    };
    let s = s.clone();
    let pos = match get(i, "_pos") {
        Value::Int(p) => (p.max(0) as usize).min(s.len()),
        _ => 0,
    };
    let mut pos = pos;
    while !s.is_char_boundary(pos) {
        pos -= 1;
    }
    Ok((s, pos))
}

fn size_arg(args: &[Value]) -> R<i64> {
    match args.get(1) {
        None | Some(Value::None) => Ok(-1),
        Some(v) => super::convert::int_arg(v, ""),
    }
}

fn read(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("read", args, 1, 2)?;
    let i = this(args, "read")?;
    let (s, pos) = text(i)?;
    let n = size_arg(args)?;
    let end = if n < 0 {
        s.len()
    } else {
        s[pos..]
            .char_indices()
            .nth(n as usize)
            .map_or(s.len(), |(b, _)| pos + b)
    };
    set(i, "_pos", Value::Int(end as i64));
    Ok(Value::str(&s[pos..end]))
}

/// The next line (with its `\n`) from the current position; "" at the end.
fn next_line(i: &Instance, limit: i64) -> R<String> {
    let (s, pos) = text(i)?;
    let mut end = s[pos..].find('\n').map_or(s.len(), |b| pos + b + 1);
    if limit >= 0 {
        if let Some((b, _)) = s[pos..end].char_indices().nth(limit as usize) {
            end = pos + b;
        }
    }
    set(i, "_pos", Value::Int(end as i64));
    Ok(s[pos..end].to_string())
}

fn readline(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("readline", args, 1, 2)?;
    let i = this(args, "readline")?;
    Ok(Value::str(&next_line(i, size_arg(args)?)?))
}

fn readlines(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("readlines", args, 1, 2)?;
    let i = this(args, "readlines")?;
    let mut out = Vec::new();
    loop {
        let l = next_line(i, -1)?;
        if l.is_empty() {
            break;
        }
        out.push(Value::str(&l));
    }
    Ok(Value::list(out))
}

fn next(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    let i = this(args, "__next__")?;
    let l = next_line(i, -1)?;
    if l.is_empty() {
        return Err(err(ErrorKind::StopIteration, ""));
    }
    Ok(Value::str(&l))
}

/// Writes `t` at the current position: appended straight to the file in the
/// write-only modes, spliced into the text (and the file rewritten) in the `+` modes.
fn write_text(i: &Instance, t: &str) -> R<()> {
    if !flag(i, "_writable") {
        return Err(err(ErrorKind::OSError, "not writable"));
    }
    let path = match &get(i, "_path") {
        Value::Str(p) => p.clone(),
        _ => return Err(value_err("I/O operation on closed file.")),
    };
    let oe = |e: std::io::Error| os_error(&e, &path);
    let pos = match get(i, "_pos") {
        Value::Int(p) => p.max(0) as usize,
        _ => 0,
    };
    match &get(i, "_buf") {
        Value::Str(buf) => {
            let mut b = buf.to_string();
            let mut at = if flag(i, "_append") {
                b.len()
            } else {
                pos.min(b.len())
            };
            while !b.is_char_boundary(at) {
                at -= 1;
            }
            let mut end = at + t.len();
            while end < b.len() && !b.is_char_boundary(end) {
                end += 1;
            }
            b.replace_range(at..end.min(b.len()), t);
            std::fs::write(&*path, b.as_bytes()).map_err(oe)?;
            set(i, "_buf", Value::str(&b));
            set(i, "_pos", Value::Int((at + t.len()) as i64));
        }
        _ => {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&*path)
                .map_err(oe)?;
            f.write_all(t.as_bytes()).map_err(oe)?;
            set(i, "_pos", Value::Int((pos + t.len()) as i64));
        }
    }
    Ok(())
}

fn write(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("write", args, 2, 2)?;
    let i = this(args, "write")?;
    match &args[1] {
        Value::Str(t) => {
            write_text(i, t)?;
            Ok(Value::Int(t.chars().count() as i64))
        }
        v => Err(type_err(format!(
            "write() argument must be str, not {}",
            v.type_name()
        ))),
    }
}

fn writelines(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("writelines", args, 2, 2)?;
    let i = this(args, "writelines")?;
    let mut all = String::new();
    for l in me.collect(&args[1])? {
        match &l {
            Value::Str(t) => all.push_str(t),
            v => {
                return Err(type_err(format!(
                    "write() argument must be str, not {}",
                    v.type_name()
                )))
            }
        }
    }
    write_text(i, &all)?;
    Ok(Value::None)
}

fn seek(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("seek", args, 2, 3)?;
    let i = this(args, "seek")?;
    let off = super::convert::int_arg(&args[1], "")?;
    let whence = match args.get(2) {
        Some(v) => super::convert::int_arg(v, "")?,
        None => 0,
    };
    let len = match &get(i, "_buf") {
        Value::Str(s) => s.len() as i64,
        _ => match &get(i, "_pos") {
            Value::Int(p) => *p,
            _ => 0,
        },
    };
    let cur = match get(i, "_pos") {
        Value::Int(p) => p,
        _ => 0,
    };
    let pos = match whence {
        0 if off < 0 => return Err(value_err(format!("negative seek position {off}"))),
        0 => off,
        1 if off == 0 => cur,
        2 if off == 0 => len,
        1 => {
            return Err(err(
                ErrorKind::OSError,
                "can't do nonzero cur-relative seeks",
            ))
        }
        2 => {
            return Err(err(
                ErrorKind::OSError,
                "can't do nonzero end-relative seeks",
            ))
        }
        w => {
            return Err(value_err(format!(
                "invalid whence ({w}, should be 0, 1 or 2)"
            )))
        }
    };
    set(i, "_pos", Value::Int(pos));
    Ok(Value::Int(pos))
}

fn tell(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("tell", args, 1, 1)?;
    Ok(get(this(args, "tell")?, "_pos"))
}

fn close(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("close", args, 1, 1)?;
    if let Some(Value::Instance(i)) = args.first() {
        set(i, "closed", Value::Bool(true));
        set(i, "_buf", Value::None);
    }
    Ok(Value::None)
}

fn flush(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("flush", args, 1, 1)?;
    this(args, "flush")?;
    Ok(Value::None)
}

fn readable(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    Ok(Value::Bool(flag(this(args, "readable")?, "_readable")))
}

fn writable(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    Ok(Value::Bool(flag(this(args, "writable")?, "_writable")))
}

fn enter(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    this(args, "__enter__")?;
    Ok(args[0].clone())
}

fn exit(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    close(me, &args[..1.min(args.len())], kw)?;
    Ok(Value::Bool(false))
}

fn repr(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    let Some(Value::Instance(i)) = args.first() else {
        return Err(type_err("__repr__() needs a file object"));
    };
    let name = me.repr(&get(i, "name"))?;
    let mode = me.repr(&get(i, "mode"))?;
    let enc = me.repr(&get(i, "encoding"))?;
    Ok(Value::str(&format!(
        "<_io.TextIOWrapper name={name} mode={mode} encoding={enc}>"
    )))
}
