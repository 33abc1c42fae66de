//! Packages: `torch.*` names as aliases of Kiln's modules, submodules as attributes of their
//! package, and the public names that `from m import *` copies.

use super::value::{ModuleObj, Value};
use super::{err, Interp, R};
use crate::error::ErrorKind;
use std::rc::Rc;

/// PyTorch's module paths and the Kiln module each one names (the same object, so
/// `torch.nn is nn`). `import torch` binds every row whose target exists.
const TORCH_ALIASES: &[(&str, &str)] = &[
    ("torch.nn", "nn"),
    ("torch.nn.functional", "nn.functional"),
    ("torch.nn.init", "nn.init"),
    ("torch.nn.utils", "nn.utils"),
    ("torch.nn.utils.rnn", "nn.utils.rnn"),
    ("torch.nn.parallel", "nn.parallel"),
    ("torch.optim", "optim"),
    ("torch.optim.lr_scheduler", "optim.lr_scheduler"),
    ("torch.utils.data", "data"),
    ("torch.utils.data.distributed", "data.distributed"),
    ("torch.utils.tensorboard", "utils.tensorboard"),
    ("torch.linalg", "linalg"),
    ("torch.return_types", "return_types"),
    ("torch.cuda", "cuda"),
    ("torch.autograd", "autograd"),
    ("torch.distributed", "dist"),
];

/// The Kiln module a PyTorch module path names, if it is one of the aliases.
pub(super) fn torch_alias(name: &str) -> Option<&'static str> {
    TORCH_ALIASES
        .iter()
        .find(|(t, _)| *t == name)
        .map(|(_, k)| *k)
}

/// Whether `name` is a namespace that only groups aliases (`torch.utils`).
pub(super) fn is_alias_namespace(name: &str) -> bool {
    TORCH_ALIASES.iter().any(|(t, _)| {
        t.len() > name.len() && t.starts_with(name) && t[name.len()..].starts_with('.')
    })
}

/// Whether `e` says that this module (or the Kiln module it aliases), or a package above
/// it, is absent.
pub(super) fn is_not_found(e: &super::Exc, path: &[super::tree::Name]) -> bool {
    let name = path.iter().map(|p| &**p).collect::<Vec<_>>().join(".");
    let target = torch_alias(&name).unwrap_or(&name);
    let Some(missing) = e
        .error
        .message
        .strip_prefix("No module named '")
        .and_then(|m| m.strip_suffix('\''))
    else {
        return false;
    };
    let within = |full: &str| {
        full == missing || (full.starts_with(missing) && full[missing.len()..].starts_with('.'))
    };
    e.error.kind == ErrorKind::ImportError && (within(&name) || within(target))
}

/// A module with no code: a namespace package or a group of aliases (`torch.utils`).
pub(super) fn empty_module(name: &str) -> Rc<ModuleObj> {
    let m = Rc::new(ModuleObj::new(name, None));
    super::gc::track_module(&m);
    m.set(&"__name__".into(), Value::str(name));
    m
}

impl Interp {
    /// The `torch` module: Kiln's globals (tensor functions, dtypes, `no_grad`...) plus
    /// every `torch.*` submodule alias that this build has.
    pub(super) fn torch_module(&mut self) -> R<Rc<ModuleObj>> {
        let m = Rc::new(ModuleObj::new("torch", None));
        super::gc::track_module(&m);
        let mut names: Vec<_> = self.b.names.iter().collect();
        names.sort_by(|a, b| a.0.cmp(b.0));
        for (n, v) in names {
            m.set(n, v.clone());
        }
        m.set(&"__name__".into(), Value::str("torch"));
        // torch's dtype aliases that are Python builtins among Kiln's globals
        m.set(&"int".into(), Value::DType(crate::tensor::DType::I32));
        m.set(&"float".into(), Value::DType(crate::tensor::DType::F32));
        m.set(&"bool".into(), Value::DType(crate::tensor::DType::Bool));
        Ok(m)
    }

    /// After `torch` itself is cached: binds each alias whose Kiln module exists, so
    /// `import torch` alone makes `torch.nn.functional` reachable, as in PyTorch.
    pub(super) fn bind_torch_submodules(&mut self) -> R<()> {
        for (alias, _) in TORCH_ALIASES {
            let path: Vec<super::tree::Name> = alias.split('.').map(Into::into).collect();
            match self.import(&path) {
                Err(e) if !is_not_found(&e, &path) => return Err(e),
                _ => {}
            }
        }
        // torch.Generator is data.Generator (PyTorch's CPU engine, for shuffles).
        let generator = self
            .modules
            .get("torch.utils.data")
            .and_then(|d| d.get("Generator"));
        if let (Some(g), Some(torch)) = (generator, self.modules.get("torch")) {
            torch.set(&"Generator".into(), g);
        }
        Ok(())
    }

    /// Imports `a.b.c` given as a string (each part must be a name).
    pub(crate) fn import_dotted(&mut self, name: &str) -> R<Rc<ModuleObj>> {
        let path: Vec<super::tree::Name> = name.split('.').map(Into::into).collect();
        self.import(&path)
    }

    /// `from package import sub` where `sub` is a submodule not imported yet (None when
    /// there is no such module: the caller reports the missing name).
    pub(super) fn import_submodule(
        &mut self,
        package: &[super::tree::Name],
        sub: &super::tree::Name,
    ) -> R<Option<Value>> {
        let mut path = package.to_vec();
        path.push(sub.clone());
        match self.import(&path) {
            Ok(m) => Ok(Some(Value::Module(m))),
            Err(e) if is_not_found(&e, &path) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The namespace package for a directory with no package file: an empty module,
    /// itself bound in its own package (or namespace).
    pub(super) fn namespace(&mut self, path: &[super::tree::Name]) -> R<Rc<ModuleObj>> {
        let name = path.iter().map(|p| &**p).collect::<Vec<_>>().join(".");
        let key = self.module_key(&name, path);
        if let Some(m) = self.modules.get(key.as_str()) {
            return Ok(m.clone());
        }
        let m = empty_module(&name);
        self.modules.insert(key.as_str().into(), m.clone());
        if let Some((last, parent)) = path.split_last() {
            if !parent.is_empty() {
                let p = match self.import(parent) {
                    Ok(p) => p,
                    Err(e) if is_not_found(&e, parent) => self.namespace(parent)?,
                    Err(e) => return Err(e),
                };
                p.set(last, Value::Module(m.clone()));
            }
        }
        Ok(m)
    }

    /// The names `from m import *` binds: `__all__` when the module defines it, else every
    /// bound name not starting with an underscore.
    pub(super) fn public_names(&mut self, m: &Rc<ModuleObj>) -> R<Vec<(Rc<str>, Value)>> {
        let Some(all) = m.get("__all__") else {
            return Ok(m
                .items()
                .into_iter()
                .filter(|(n, _)| !n.starts_with('_'))
                .collect());
        };
        let mut out = Vec::new();
        for n in self.collect(&all)? {
            let Value::Str(s) = &n else {
                return Err(err(
                    ErrorKind::TypeError,
                    format!(
                        "Item in {}.__all__ must be str, not {}",
                        m.name,
                        n.type_name()
                    ),
                ));
            };
            let v = m.get(s).ok_or_else(|| {
                err(
                    ErrorKind::AttributeError,
                    format!("module '{}' has no attribute '{}'", m.name, s),
                )
            })?;
            out.push((s.as_ref().into(), v));
        }
        Ok(out)
    }
}
