//! Builtin functions, types, exception classes and standard-library modules.

pub mod call_nodes;
pub mod checkpoint;
pub mod compile;
pub mod convert;
pub mod copymod;
pub mod display;
pub mod distmod;
pub mod export;
pub mod export_axes;
pub mod fileobj;
pub mod funcs;
pub mod generator;
pub mod grad_fn;
pub mod iomod;
pub mod jsonmod;
pub mod linalg_funcs;
pub mod mathmod;
pub mod mathmore;
pub mod methods;
pub mod norm_funcs;
pub mod numarray;
pub mod optim_step;
pub mod osmod;
pub mod percent;
pub mod plotmod;
pub mod progress;
pub mod pyfuncs;
pub mod pyrandom;
pub mod randmod;
pub mod randmore;
pub mod reengine;
pub mod remod;
pub mod return_types;
pub mod seq_funcs;
pub mod seqmethods;
pub mod setops;
pub mod size;
pub mod strformat;
pub mod strmethods;
pub mod tbmod;
pub mod tensor;
pub mod tensor_create;
pub mod tensor_funcs;
pub mod tensor_grad;
pub mod tensor_index;
pub mod tensor_methods;
pub mod tensor_more;
pub mod tensor_more_funcs;
pub mod tensor_more_misc;
pub mod tensor_ops;
pub mod tensor_reduce;
pub mod timemod;

use super::value::{Class, ClassKind, NativeCode, NativeFn, NativeImpl, TypeTag, Value};
use super::{type_err, Interp, R};
use crate::error::ErrorKind;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// The builtin namespace and the class objects of built-in types and exceptions.
/// The builtin names, hashed with foldhash, in insertion order: a load of a builtin
/// (`len`, `str`) looks it up here once per site, then reads the position its site
/// remembers (`Interp::builtin`; the table does not change after start-up).
pub type Names = indexmap::IndexMap<Rc<str>, Value, crate::interp::value::FxBuild>;

pub struct Builtins {
    pub names: Names,
    types: Vec<(TypeTag, Rc<Class>)>,
    excs: Vec<(ErrorKind, Rc<Class>)>,
    pub object: Rc<Class>,
    /// `property`, `staticmethod`, `classmethod`.
    pub descr: crate::interp::descr::Descriptors,
}

/// A new class object: `base` (or `object` when `None`) and its MRO.
pub(crate) fn new_class(name: &str, base: Option<Rc<Class>>, kind: ClassKind) -> Rc<Class> {
    let layout = base
        .as_ref()
        .map_or_else(crate::interp::value::Layout::root, |b| b.layout.clone());
    Rc::new(Class {
        name: name.into(),
        mro: crate::interp::mro::single(&base),
        base,
        dict: RefCell::new(Default::default()),
        kind,
        gc: Default::default(),
        methods: Default::default(),
        layout,
    })
}

/// Wraps a Rust function as a Kiln value.
pub fn native(name: &str, f: NativeImpl) -> Value {
    Value::Native(Rc::new(NativeFn {
        name: name.into(),
        code: NativeCode::Builtin(f),
    }))
}

const TYPES: &[(TypeTag, &str)] = &[
    (TypeTag::NoneType, "NoneType"),
    (TypeTag::Int, "int"),
    (TypeTag::Float, "float"),
    (TypeTag::Str, "str"),
    (TypeTag::List, "list"),
    (TypeTag::Tuple, "tuple"),
    (TypeTag::Dict, "dict"),
    (TypeTag::Set, "set"),
    (TypeTag::FrozenSet, "frozenset"),
    (TypeTag::Range, "range"),
    (TypeTag::Slice, "slice"),
    (TypeTag::Function, "function"),
    (TypeTag::BuiltinFunction, "builtin_function_or_method"),
    (TypeTag::Method, "method"),
    (TypeTag::Type, "type"),
    (TypeTag::Module, "module"),
    (TypeTag::Iterator, "iterator"),
    (TypeTag::Super, "super"),
    (TypeTag::Ellipsis, "ellipsis"),
    (TypeTag::Tensor, "Tensor"),
];

/// Exception classes: name, kind, parent name.
const EXCS: &[(&str, ErrorKind, &str)] = &[
    ("Exception", ErrorKind::Exception, "BaseException"),
    (
        "KeyboardInterrupt",
        ErrorKind::KeyboardInterrupt,
        "BaseException",
    ),
    ("LimitExceeded", ErrorKind::LimitExceeded, "BaseException"),
    ("SyntaxError", ErrorKind::SyntaxError, "Exception"),
    (
        "IndentationError",
        ErrorKind::IndentationError,
        "SyntaxError",
    ),
    ("MemoryError", ErrorKind::MemoryError, "Exception"),
    ("NameError", ErrorKind::NameError, "Exception"),
    ("TypeError", ErrorKind::TypeError, "Exception"),
    ("ValueError", ErrorKind::ValueError, "Exception"),
    ("LookupError", ErrorKind::Exception, "Exception"),
    ("IndexError", ErrorKind::IndexError, "LookupError"),
    ("KeyError", ErrorKind::KeyError, "LookupError"),
    ("AttributeError", ErrorKind::AttributeError, "Exception"),
    ("ArithmeticError", ErrorKind::Exception, "Exception"),
    (
        "ZeroDivisionError",
        ErrorKind::ZeroDivisionError,
        "ArithmeticError",
    ),
    ("OverflowError", ErrorKind::OverflowError, "ArithmeticError"),
    ("AssertionError", ErrorKind::AssertionError, "Exception"),
    ("RuntimeError", ErrorKind::RuntimeError, "Exception"),
    ("LinAlgError", ErrorKind::LinAlgError, "RuntimeError"),
    ("RecursionError", ErrorKind::RecursionError, "RuntimeError"),
    (
        "NotImplementedError",
        ErrorKind::NotImplementedError,
        "RuntimeError",
    ),
    ("ShapeError", ErrorKind::ShapeError, "RuntimeError"),
    ("ImportError", ErrorKind::ImportError, "Exception"),
    ("OSError", ErrorKind::OSError, "Exception"),
    ("FileNotFoundError", ErrorKind::FileNotFoundError, "OSError"),
    ("FileExistsError", ErrorKind::FileExistsError, "OSError"),
    ("PermissionError", ErrorKind::PermissionError, "OSError"),
    ("IsADirectoryError", ErrorKind::IsADirectoryError, "OSError"),
    (
        "NotADirectoryError",
        ErrorKind::NotADirectoryError,
        "OSError",
    ),
    ("EOFError", ErrorKind::EOFError, "Exception"),
    ("SystemExit", ErrorKind::SystemExit, "BaseException"),
    ("StopIteration", ErrorKind::StopIteration, "Exception"),
    ("GeneratorExit", ErrorKind::GeneratorExit, "BaseException"),
];

impl Builtins {
    pub fn new() -> Builtins {
        let object = new_class("object", None, ClassKind::Builtin(TypeTag::Object));
        for (n, f) in [
            ("__setattr__", super::class::object_setattr as NativeImpl),
            ("__delattr__", super::class::object_delattr),
        ] {
            object.dict.borrow_mut().insert(n.into(), native(n, f));
        }
        let mut names = Names::default();
        let mut types = vec![(TypeTag::Object, object.clone())];
        names.insert("object".into(), Value::Class(object.clone()));
        for (tag, name) in TYPES {
            let c = new_class(name, None, ClassKind::Builtin(*tag));
            names.insert((*name).into(), Value::Class(c.clone()));
            types.push((*tag, c));
        }
        let int = types
            .iter()
            .find(|(t, _)| *t == TypeTag::Int)
            .map(|(_, c)| c.clone());
        let boolc = new_class("bool", int, ClassKind::Builtin(TypeTag::Bool));
        names.insert("bool".into(), Value::Class(boolc.clone()));
        types.push((TypeTag::Bool, boolc));
        // torch.Size: a tuple subclass (the global `Size`, so `torch.Size` after `import torch`)
        let tuple = types.iter().find(|(t, _)| *t == TypeTag::Tuple);
        let size = new_class(
            "Size",
            tuple.map(|(_, c)| c.clone()),
            ClassKind::Builtin(TypeTag::Size),
        );
        names.insert("Size".into(), Value::Class(size.clone()));
        types.push((TypeTag::Size, size));
        let base_exc = new_class("BaseException", None, ClassKind::Exc(ErrorKind::Exception));
        base_exc
            .dict
            .borrow_mut()
            .insert("__init__".into(), native("__init__", super::exc::exc_init));
        names.insert("BaseException".into(), Value::Class(base_exc.clone()));
        let mut by_name: HashMap<&str, Rc<Class>> = HashMap::new();
        by_name.insert("BaseException", base_exc);
        let mut excs = Vec::new();
        for (name, kind, parent) in EXCS {
            let c = new_class(name, by_name.get(parent).cloned(), ClassKind::Exc(*kind));
            by_name.insert(name, c.clone());
            names.insert((*name).into(), Value::Class(c.clone()));
            if !matches!((name, kind), (n, ErrorKind::Exception) if *n != "Exception") {
                excs.push((*kind, c));
            }
        }
        funcs::register(&mut names);
        display::register(&mut names);
        names.insert("open".into(), native("open", fileobj::open));
        names.insert("NotImplemented".into(), Value::NotImplemented);
        if let Some(Value::Class(s)) = names.get("str") {
            s.dict.borrow_mut().insert(
                "maketrans".into(),
                native("maketrans", strmethods::maketrans_fn),
            );
        }
        names.insert("progress".into(), native("progress", progress::progress));
        tensor::register(&mut names);
        // classes of the dtype and grad-mode values (not globals)
        for (tag, name) in [
            (TypeTag::DType, "dtype"),
            (TypeTag::GradMode, "no_grad"),
            (TypeTag::Generator, "generator"),
            (TypeTag::NotImplementedType, "NotImplementedType"),
        ] {
            types.push((tag, new_class(name, None, ClassKind::Builtin(tag))));
        }
        let descr = crate::interp::descr::Descriptors::new(&mut names);
        let mut b = Builtins {
            descr,
            names,
            types,
            excs,
            object,
        };
        pyfuncs::register(&mut b);
        b
    }

    /// The class object of a built-in type.
    pub fn type_class(&self, tag: TypeTag) -> Rc<Class> {
        self.types
            .iter()
            .find(|(t, _)| *t == tag)
            .map(|(_, c)| c.clone())
            .unwrap_or_else(|| self.object.clone())
    }

    /// The class of a built-in exception kind.
    pub fn exc_class(&self, kind: ErrorKind) -> Rc<Class> {
        self.excs
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, c)| c.clone())
            .unwrap_or_else(|| self.object.clone())
    }
}

impl Default for Builtins {
    fn default() -> Self {
        Builtins::new()
    }
}

/// Whether a built-in value has a method of this name (for `obj.name` as a value).
pub fn has_method(obj: &Value, name: &str) -> bool {
    match obj {
        Value::Str(_) => methods::STR_METHODS.contains(&name),
        Value::List(_) => seqmethods::LIST_METHODS.contains(&name),
        Value::Dict(_) => seqmethods::DICT_METHODS.contains(&name),
        Value::Set(_) => seqmethods::SET_METHODS.contains(&name),
        Value::FrozenSet(_) => seqmethods::FROZENSET_METHODS.contains(&name),
        Value::Tuple(_) => seqmethods::TUPLE_METHODS.contains(&name),
        Value::Size(_) => size::has_method(name),
        Value::Tensor(_) => tensor_methods::TENSOR_METHODS.contains(&name),
        Value::GradMode(_) => tensor_grad::GRAD_MODE_METHODS.contains(&name),
        Value::GradFn(_) => grad_fn::GRAD_FN_METHODS.contains(&name),
        Value::Graph(_) => export::GRAPH_METHODS.contains(&name),
        Value::Iter(_) => {
            crate::interp::gen::as_gen(obj).is_some()
                && crate::interp::gen::GEN_METHODS.contains(&name)
        }
        _ => false,
    }
}

impl Interp {
    /// Calls a method of a built-in type (`"a,b".split(",")`, `xs.append(1)`, ...).
    pub fn call_builtin_method(
        &mut self,
        obj: &Value,
        name: &str,
        args: Vec<Value>,
        kw: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        use crate::interp::capture::symint;
        if let Value::SymInt(_) | Value::SymFloat(_) = obj {
            return self.call_builtin_method(&symint::concrete(obj), name, args, kw);
        }
        if symint::any_sym(&args) || kw.iter().any(|(_, v)| symint::has_sym(v)) {
            if let Value::Tensor(t) = obj {
                if let Some(r) = symint::shape_method(t, name, &args, &kw) {
                    return r;
                }
            }
            let args = symint::concrete_all(&args);
            let kw = kw
                .iter()
                .map(|(k, v)| (k.clone(), symint::concrete(v)))
                .collect();
            return self.call_builtin_method(obj, name, args, kw);
        }
        let r = match obj {
            Value::Str(s) => methods::str_method(self, s, name, &args, &kw),
            Value::List(l) => seqmethods::list_method(self, l, name, args, kw),
            Value::Dict(d) => seqmethods::dict_method(self, d, name, &args, &kw),
            Value::Set(d) => seqmethods::set_method(self, d, name, &args),
            Value::FrozenSet(d) => seqmethods::frozenset_method(self, d, name, args),
            Value::Tuple(t) => seqmethods::tuple_method(self, t, name, &args),
            Value::Size(t) => size::method(self, t, name, &args),
            Value::Tensor(t) if name == "backward" => tensor_grad::backward(self, t, &args, &kw)
                .and_then(|v| {
                    self.dist_after_backward()?;
                    Ok(v)
                }),
            Value::Tensor(t) => tensor_methods::tensor_method(t, name, &args, &kw)
                .and_then(|v| self.named_result(name, v)),
            Value::GradMode(g) => tensor_grad::grad_mode_method(g, name),
            Value::GradFn(g) => grad_fn::method(g, name, &args),
            Value::Graph(g) => export::graph_method(self, g, name, &args),
            Value::Iter(_) if crate::interp::gen::as_gen(obj).is_some() => {
                match crate::interp::gen::as_gen(obj) {
                    Some(g) => self.gen_method(&g, name, &args),
                    None => Ok(Value::None),
                }
            }
            _ => {
                let f = self.get_attr(obj, name)?;
                self.call_value(&f, args, kw)
            }
        };
        r.map_err(|e| crate::interp::suggest::note_attr(e, obj, name))
    }

    /// Data attributes of built-in values (`range.start`, `slice.stop`, ...).
    pub fn builtin_attr(&mut self, obj: &Value, name: &str) -> R<Option<Value>> {
        if let Value::Tensor(t) = obj {
            return Ok(tensor_methods::tensor_attr(t, name));
        }
        if let Value::Graph(g) = obj {
            return Ok(export::graph_attr(g, name));
        }
        if let Value::GradFn(g) = obj {
            return Ok(grad_fn::attr(g, name));
        }
        Ok(match (obj, name) {
            (Value::Range(r), "start") => Some(Value::Int(r.start)),
            (Value::Range(r), "stop") => Some(Value::Int(r.stop)),
            (Value::Range(r), "step") => Some(Value::Int(r.step)),
            (Value::Slice(s), "start") => Some(s[0].clone()),
            (Value::Slice(s), "stop") => Some(s[1].clone()),
            (Value::Slice(s), "step") => Some(s[2].clone()),
            (Value::Float(f), "real") => Some(Value::Float(*f)),
            (Value::Int(i), "real") => Some(Value::Int(*i)),
            (Value::BoundMethod(bm), "__self__") => Some(bm.0.clone()),
            (Value::BoundMethod(bm), "__func__") => Some(bm.1.clone()),
            (Value::DType(d), _) => dtype_attr(*d, name),
            _ => None,
        })
    }
}

/// torch.dtype's data attributes (`torch.float32.is_floating_point`, ...).
fn dtype_attr(d: crate::tensor::DType, name: &str) -> Option<Value> {
    use crate::tensor::DType;
    Some(match name {
        "is_floating_point" => Value::Bool(d.is_float()),
        "is_complex" => Value::Bool(false),
        "is_signed" => Value::Bool(!matches!(d, DType::U8 | DType::Bool)),
        "itemsize" => Value::Int(d.size() as i64),
        _ => return None,
    })
}

/// Checks the positional argument count of a builtin.
pub fn arity(name: &str, args: &[Value], min: usize, max: usize) -> R<()> {
    if args.len() < min || args.len() > max {
        let (want, n) = if min == max {
            ("exactly", min)
        } else if args.len() < min {
            ("at least", min)
        } else {
            ("at most", max)
        };
        return Err(type_err(format!(
            "{}() takes {} {} argument{} ({} given)",
            name,
            want,
            n,
            if n == 1 { "" } else { "s" },
            args.len()
        )));
    }
    Ok(())
}

/// Finds a keyword argument by name.
pub fn kwarg<'a>(kw: &'a [(Rc<str>, Value)], name: &str) -> Option<&'a Value> {
    kw.iter().find(|(k, _)| &**k == name).map(|(_, v)| v)
}

/// Rejects keyword arguments other than `allowed`.
pub fn no_kw(fname: &str, kw: &[(Rc<str>, Value)], allowed: &[&str]) -> R<()> {
    for (k, _) in kw {
        if !allowed.contains(&&**k) {
            return Err(type_err(format!(
                "{fname}() got an unexpected keyword argument '{k}'"
            )));
        }
    }
    Ok(())
}
