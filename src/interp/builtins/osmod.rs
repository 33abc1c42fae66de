//! The `os` and `os.path` modules (POSIX path rules, as CPython's `posixpath`). Every
//! call that touches the file system goes through `fileobj::fs_gate`.

use super::fileobj::{fs_gate, os_error};
use super::mathmod::module;
use super::{arity, kwarg};
use crate::interp::value::{DictMap, Key, ModuleObj, Value};
use crate::interp::{type_err, Interp, R};
use std::cell::RefCell;
use std::rc::Rc;

type Kw<'a> = &'a [(Rc<str>, Value)];

/// The `os` module (with `os.path` as its `path` attribute).
pub fn os_module(me: &Interp) -> Rc<ModuleObj> {
    let mut env = DictMap::default();
    if me.allow_fs {
        for (k, v) in std::env::vars() {
            env.insert(Key(Value::str(&k)), Value::str(&v));
        }
    }
    module(
        "os",
        &[
            ("getcwd", getcwd),
            ("listdir", listdir),
            ("makedirs", makedirs),
            ("mkdir", mkdir),
            ("remove", remove),
            ("unlink", remove),
            ("rmdir", rmdir),
            ("rename", rename),
            ("replace", rename),
            ("getenv", getenv),
        ],
        &[
            ("environ", Value::Dict(Rc::new(RefCell::new(env)))),
            ("sep", Value::str("/")),
            ("linesep", Value::str("\n")),
            ("pathsep", Value::str(":")),
            ("curdir", Value::str(".")),
            ("pardir", Value::str("..")),
            ("name", Value::str("posix")),
            ("path", Value::Module(path_module())),
        ],
    )
}

/// The `os.path` module.
pub fn path_module() -> Rc<ModuleObj> {
    module(
        "posixpath",
        &[
            ("join", join),
            ("exists", exists),
            ("isfile", isfile),
            ("isdir", isdir),
            ("basename", basename),
            ("dirname", dirname),
            ("split", split),
            ("splitext", splitext),
            ("abspath", abspath),
            ("normpath", normpath),
            ("isabs", isabs),
            ("getsize", getsize),
            ("expanduser", expanduser),
        ],
        &[("sep", Value::str("/"))],
    )
}

/// A path argument: a str, or an object whose `str()` is the path (`pathlib.Path`).
pub fn path_str(me: &mut Interp, v: &Value, fname: &str) -> R<String> {
    match v {
        Value::Str(s) => Ok(s.to_string()),
        Value::Instance(_) => me.str_of(v),
        _ => Err(type_err(format!(
            "{fname}: path should be string, bytes or os.PathLike, not {}",
            v.type_name()
        ))),
    }
}

fn one_path(me: &mut Interp, args: &[Value], fname: &str) -> R<String> {
    arity(fname, args, 1, 1)?;
    path_str(me, &args[0], fname)
}

fn getcwd(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("getcwd", args, 0, 0)?;
    fs_gate(me, "os.getcwd()")?;
    let d = std::env::current_dir().map_err(|e| os_error(&e, "."))?;
    Ok(Value::str(&d.display().to_string()))
}

fn listdir(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("listdir", args, 0, 1)?;
    let p = match args.first() {
        Some(v) => path_str(me, v, "listdir")?,
        None => ".".into(),
    };
    fs_gate(me, "os.listdir()")?;
    let rd = std::fs::read_dir(&p).map_err(|e| os_error(&e, &p))?;
    let mut out = Vec::new();
    for e in rd {
        let e = e.map_err(|e| os_error(&e, &p))?;
        out.push(Value::str(&e.file_name().to_string_lossy()));
    }
    Ok(Value::list(out))
}

fn makedirs(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    arity("makedirs", args, 1, 3)?;
    let p = path_str(me, &args[0], "makedirs")?;
    let exist_ok = match args.get(2).or_else(|| kwarg(kw, "exist_ok")) {
        Some(v) => me.truthy(v)?,
        None => false,
    };
    fs_gate(me, "os.makedirs()")?;
    if std::path::Path::new(&p).exists() {
        if exist_ok && std::path::Path::new(&p).is_dir() {
            return Ok(Value::None);
        }
        return Err(os_error(&std::io::Error::from_raw_os_error(17), &p));
    }
    std::fs::create_dir_all(&p).map_err(|e| os_error(&e, &p))?;
    Ok(Value::None)
}

fn mkdir(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("mkdir", args, 1, 2)?;
    let p = path_str(me, &args[0], "mkdir")?;
    fs_gate(me, "os.mkdir()")?;
    std::fs::create_dir(&p).map_err(|e| os_error(&e, &p))?;
    Ok(Value::None)
}

fn remove(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    let p = one_path(me, args, "remove")?;
    fs_gate(me, "os.remove()")?;
    std::fs::remove_file(&p).map_err(|e| os_error(&e, &p))?;
    Ok(Value::None)
}

fn rmdir(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    let p = one_path(me, args, "rmdir")?;
    fs_gate(me, "os.rmdir()")?;
    std::fs::remove_dir(&p).map_err(|e| os_error(&e, &p))?;
    Ok(Value::None)
}

fn rename(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("rename", args, 2, 2)?;
    let a = path_str(me, &args[0], "rename")?;
    let b = path_str(me, &args[1], "rename")?;
    fs_gate(me, "os.rename()")?;
    std::fs::rename(&a, &b).map_err(|e| os_error(&e, &a))?;
    Ok(Value::None)
}

fn getenv(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("getenv", args, 1, 2)?;
    let k = path_str(me, &args[0], "getenv")?;
    let dflt = args.get(1).cloned().unwrap_or(Value::None);
    if !me.allow_fs {
        return Ok(dflt);
    }
    Ok(std::env::var(&k).map_or(dflt, |v| Value::str(&v)))
}

/// `posixpath.join`.
pub fn join_str(parts: &[String]) -> String {
    let mut out = String::new();
    for p in parts {
        if p.starts_with('/') {
            out = p.clone();
        } else if out.is_empty() || out.ends_with('/') {
            out.push_str(p);
        } else {
            out.push('/');
            out.push_str(p);
        }
    }
    out
}

fn join(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    if args.is_empty() {
        return Err(type_err(
            "join() missing 1 required positional argument: 'a'",
        ));
    }
    let mut parts = Vec::new();
    for a in args {
        parts.push(path_str(me, a, "join()")?);
    }
    Ok(Value::str(&join_str(&parts)))
}

fn probe(me: &mut Interp, args: &[Value], fname: &str) -> R<Option<std::fs::Metadata>> {
    let p = one_path(me, args, fname)?;
    fs_gate(me, &format!("os.path.{fname}()"))?;
    Ok(std::fs::metadata(&p).ok())
}

fn exists(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    Ok(Value::Bool(probe(me, args, "exists")?.is_some()))
}

fn isfile(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    Ok(Value::Bool(
        probe(me, args, "isfile")?.is_some_and(|m| m.is_file()),
    ))
}

fn isdir(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    Ok(Value::Bool(
        probe(me, args, "isdir")?.is_some_and(|m| m.is_dir()),
    ))
}

fn getsize(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    let p = one_path(me, args, "getsize")?;
    fs_gate(me, "os.path.getsize()")?;
    let m = std::fs::metadata(&p).map_err(|e| os_error(&e, &p))?;
    Ok(Value::Int(m.len() as i64))
}

/// `posixpath.split`: (head, tail), head without trailing slashes unless all slashes.
pub fn split_str(p: &str) -> (String, String) {
    let i = p.rfind('/').map_or(0, |i| i + 1);
    let (head, tail) = (&p[..i], &p[i..]);
    let trimmed = head.trim_end_matches('/');
    let head = if trimmed.is_empty() { head } else { trimmed };
    (head.to_string(), tail.to_string())
}

fn basename(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    let p = one_path(me, args, "basename")?;
    Ok(Value::str(&split_str(&p).1))
}

fn dirname(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    let p = one_path(me, args, "dirname")?;
    Ok(Value::str(&split_str(&p).0))
}

fn split(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    let p = one_path(me, args, "split")?;
    let (h, t) = split_str(&p);
    Ok(Value::tuple(vec![Value::str(&h), Value::str(&t)]))
}

/// `posixpath.splitext`: the extension starts at the last dot of the last component,
/// unless only dots precede it.
pub fn splitext_str(p: &str) -> (String, String) {
    let base_start = p.rfind('/').map_or(0, |i| i + 1);
    if let Some(dot) = p.rfind('.') {
        if dot > base_start && p[base_start..dot].chars().any(|c| c != '.') {
            return (p[..dot].to_string(), p[dot..].to_string());
        }
    }
    (p.to_string(), String::new())
}

fn splitext(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    let p = one_path(me, args, "splitext")?;
    let (a, b) = splitext_str(&p);
    Ok(Value::tuple(vec![Value::str(&a), Value::str(&b)]))
}

/// `posixpath.normpath`.
pub fn normpath_str(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let lead = if p.starts_with("//") && !p.starts_with("///") {
        "//"
    } else if p.starts_with('/') {
        "/"
    } else {
        ""
    };
    let mut comps: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if comps.last().is_some_and(|l| *l != "..") {
                    comps.pop();
                } else if lead.is_empty() {
                    comps.push("..");
                }
            }
            c => comps.push(c),
        }
    }
    let s = format!("{lead}{}", comps.join("/"));
    if s.is_empty() {
        ".".into()
    } else {
        s
    }
}

fn normpath(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    let p = one_path(me, args, "normpath")?;
    Ok(Value::str(&normpath_str(&p)))
}

fn abspath(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    let p = one_path(me, args, "abspath")?;
    let full = if p.starts_with('/') {
        p
    } else {
        fs_gate(me, "os.path.abspath()")?;
        let cwd = std::env::current_dir().map_err(|e| os_error(&e, "."))?;
        join_str(&[cwd.display().to_string(), p])
    };
    Ok(Value::str(&normpath_str(&full)))
}

fn isabs(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    let p = one_path(me, args, "isabs")?;
    Ok(Value::Bool(p.starts_with('/')))
}

fn expanduser(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    let p = one_path(me, args, "expanduser")?;
    let home = if me.allow_fs {
        std::env::var("HOME").ok()
    } else {
        None
    };
    match (home, p.strip_prefix('~')) {
        (Some(h), Some(rest)) if rest.is_empty() || rest.starts_with('/') => {
            Ok(Value::str(&format!("{}{rest}", h.trim_end_matches('/'))))
        }
        _ => Ok(Value::str(&p)),
    }
}
