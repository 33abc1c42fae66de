//! `import`: `.dl` files next to the importing script, the embedded stdlib, native modules.

use super::resolve::resolve_module;
use super::tree::Name;
use super::value::{ModuleObj, Value};
use super::{err, Interp, R};
use crate::error::ErrorKind;
use std::rc::Rc;

/// Standard-library modules written in Kiln, embedded in the binary (name, source).
pub const STDLIB: &[(&str, &str)] = &[
    ("nn", include_str!("../../stdlib/nn.dl")),
    ("nn.module", include_str!("../../stdlib/nn/module.dl")),
    (
        "nn.functional",
        include_str!("../../stdlib/nn/functional.dl"),
    ),
    ("nn.loss", include_str!("../../stdlib/nn/loss.dl")),
    ("nn.layers", include_str!("../../stdlib/nn/layers.dl")),
    (
        "nn.activation",
        include_str!("../../stdlib/nn/activation.dl"),
    ),
    ("nn.norm", include_str!("../../stdlib/nn/norm.dl")),
    ("nn.init", include_str!("../../stdlib/nn/init.dl")),
    ("nn.utils", include_str!("../../stdlib/nn/utils.dl")),
    ("nn.rnn", include_str!("../../stdlib/nn/rnn.dl")),
    ("nn.attention", include_str!("../../stdlib/nn/attention.dl")),
    ("nn.utils.rnn", include_str!("../../stdlib/nn/utils/rnn.dl")),
    ("optim", include_str!("../../stdlib/optim.dl")),
    (
        "optim.adaptive",
        include_str!("../../stdlib/optim/adaptive.dl"),
    ),
    ("optim.lbfgs", include_str!("../../stdlib/optim/lbfgs.dl")),
    (
        "optim.lr_scheduler",
        include_str!("../../stdlib/optim/lr_scheduler.dl"),
    ),
    ("data", include_str!("../../stdlib/data.dl")),
    ("data.loader", include_str!("../../stdlib/data/loader.dl")),
    ("collections", include_str!("../../stdlib/collections.dl")),
    ("itertools", include_str!("../../stdlib/itertools.dl")),
    ("functools", include_str!("../../stdlib/functools.dl")),
    ("dataclasses", include_str!("../../stdlib/dataclasses.dl")),
    ("time", include_str!("../../stdlib/time.dl")),
    ("string", include_str!("../../stdlib/string.dl")),
    ("pathlib", include_str!("../../stdlib/pathlib.dl")),
    ("argparse", include_str!("../../stdlib/argparse.dl")),
    ("linalg", include_str!("../../stdlib/linalg.dl")),
    ("return_types", include_str!("../../stdlib/return_types.dl")),
    ("cuda", include_str!("../../stdlib/cuda.dl")),
    ("autograd", include_str!("../../stdlib/autograd.dl")),
    ("dist", include_str!("../../stdlib/dist.dl")),
    ("nn.parallel", include_str!("../../stdlib/nn/parallel.dl")),
    (
        "data.distributed",
        include_str!("../../stdlib/data/distributed.dl"),
    ),
    (
        "utils.tensorboard",
        include_str!("../../stdlib/utils/tensorboard.dl"),
    ),
    ("tensorboard", include_str!("../../stdlib/tensorboard.dl")),
    ("matplotlib", include_str!("../../stdlib/matplotlib.dl")),
    (
        "matplotlib.pyplot",
        include_str!("../../stdlib/matplotlib/pyplot.dl"),
    ),
];

impl Interp {
    /// Imports (or returns the cached) module for a dotted path. As in Python, the
    /// package is imported first and the submodule becomes its attribute; `torch.*` paths
    /// name Kiln's own modules (src/interp/packages.rs).
    pub fn import(&mut self, path: &[Name]) -> R<Rc<ModuleObj>> {
        // an import run by a stdlib function at call time is stdlib code's import too
        if self.stdlib_imports == 0 && self.globals_is_stdlib() {
            return self.in_stdlib(|i| i.import(path));
        }
        let name: String = path.iter().map(|p| &**p).collect::<Vec<_>>().join(".");
        self.check_import_allowed(&name)?;
        let key = self.module_key(&name, path);
        if let Some(m) = self.modules.get(key.as_str()) {
            return Ok(m.clone());
        }
        // a package that is absent is a namespace (a directory with no package file);
        // one that fails while running is an error
        let parent_missing = match path.len() {
            0 | 1 => None,
            n => match self.import(&path[..n - 1]) {
                Ok(_) => None,
                Err(e) if super::packages::is_not_found(&e, &path[..n - 1]) => Some(e),
                Err(e) => return Err(e),
            },
        };
        // the package's own code may have imported this submodule
        if let Some(m) = self.modules.get(key.as_str()) {
            return Ok(m.clone());
        }
        let m = match self.import_new(&name, &key, path) {
            Ok(m) => m,
            Err(e) => return Err(parent_missing.unwrap_or(e)),
        };
        self.modules.insert(key.as_str().into(), m.clone());
        if let Some((parent, last)) = path.split_last().map(|(l, p)| (p, l)) {
            if !parent.is_empty() {
                let p = match parent_missing {
                    None => self.import(parent)?,
                    Some(_) => self.namespace(parent)?,
                };
                p.set(last, Value::Module(m.clone()));
            }
        }
        Ok(m)
    }

    /// The cache key of module `name`: itself, except for a stdlib module imported by
    /// stdlib code (or through a `torch.*` alias) while the script's folder has a file of
    /// that name (the user's `data.dl` must not become `torch.utils.data`, nor Kiln's
    /// `data` the user's `import data`): then Kiln's module lives under `<stdlib>.name`.
    pub(super) fn module_key(&self, name: &str, path: &[Name]) -> String {
        // Kiln's module or a package above one (`utils` of `utils.tensorboard`)
        let ours = |n: &str| n == name || (n.starts_with(name) && n[name.len()..].starts_with('.'));
        if self.stdlib_imports == 0 || !STDLIB.iter().any(|(n, _)| ours(n)) {
            return name.to_string();
        }
        // decided once per name: a stdlib function's import at call time must not stat
        // the disk each time it runs
        let private = format!("<stdlib>.{name}");
        if self.modules.contains_key(private.as_str()) {
            return private;
        }
        let plain_is_ours = self
            .modules
            .get(name)
            .is_some_and(|m| m.dir.borrow().is_none());
        if !plain_is_ours && (1..=path.len()).any(|i| self.user_file(&path[..i]).is_some()) {
            private
        } else {
            name.to_string()
        }
    }

    /// The importing folder's file for a module path, if the sandbox allows looking and
    /// it exists. The folder is the importing module's, or under stdlib code the folder of
    /// the user module that started it.
    fn user_file(&self, path: &[Name]) -> Option<std::path::PathBuf> {
        if !self.allow_fs {
            return None; // a sandboxed run never looks at the disk (not even a stat)
        }
        let rel: String = path.iter().map(|p| &**p).collect::<Vec<_>>().join("/") + ".dl";
        let dir = match self.stdlib_imports {
            0 => self.globals.dir.borrow().clone(),
            _ => self.stdlib_caller_dir.clone(),
        };
        let dir = dir.or_else(|| std::env::current_dir().ok())?;
        let file = dir.join(rel);
        let gate = crate::io::fs_gate::check(&file, crate::io::fs_gate::Access::Read);
        (gate.is_ok() && file.is_file()).then_some(file)
    }

    /// Whether the running code is a stdlib module's (embedded: no folder, a stdlib name).
    fn globals_is_stdlib(&self) -> bool {
        self.globals.dir.borrow().is_none() && STDLIB.iter().any(|(n, _)| **n == *self.globals.name)
    }

    /// Runs `f` with imports resolving to Kiln's stdlib first (see [`Self::module_key`]).
    fn in_stdlib<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        // the user folder that started stdlib code (kept when stdlib code itself starts
        // it again at call time: its own module has no folder)
        if self.stdlib_imports == 0 && !self.globals_is_stdlib() {
            self.stdlib_caller_dir = self.globals.dir.borrow().clone();
        }
        self.stdlib_imports += 1;
        let r = f(self);
        self.stdlib_imports -= 1;
        r
    }

    /// Finds and runs a module not imported yet.
    fn import_new(&mut self, name: &str, key: &str, path: &[Name]) -> R<Rc<ModuleObj>> {
        if let Some(target) = super::packages::torch_alias(name) {
            return self.in_stdlib(|i| i.import_dotted(target));
        }
        if name == "torch" {
            let m = self.torch_module()?;
            self.modules.insert(name.into(), m.clone());
            self.bind_torch_submodules()?;
            return Ok(m);
        }
        if super::packages::is_alias_namespace(name) {
            return Ok(super::packages::empty_module(name));
        }
        let native = match name {
            "math" => {
                let m = super::builtins::mathmod::math_module();
                super::builtins::mathmore::extend(&m);
                Some(m)
            }
            "_time" => Some(super::builtins::timemod::time_module()),
            "random" => {
                let m = super::builtins::randmod::random_module();
                super::builtins::randmore::extend(&m);
                Some(m)
            }
            "io" => Some(super::builtins::iomod::io_module()),
            "sys" => Some(super::builtins::pyfuncs::sys_module(self)),
            "json" => Some(super::builtins::jsonmod::json_module(self)),
            "os" => Some(super::builtins::osmod::os_module(self)),
            "os.path" => Some(super::builtins::osmod::path_module()),
            "re" => Some(super::builtins::remod::re_module(self)),
            "copy" => Some(super::builtins::copymod::copy_module()),
            "_dist" => Some(super::builtins::distmod::dist_module()),
            "_plot" => Some(super::builtins::plotmod::plot_module()),
            "_tensorboard" => Some(super::builtins::tbmod::tensorboard_module()),
            "__future__" => Some(super::builtins::copymod::future_module()),
            _ => None,
        };
        if let Some(m) = native {
            return Ok(m);
        }
        // Kiln's own module under its private key never reads the script's folder
        let user = match key == name {
            true => self.user_file(path),
            false => None,
        };
        if let Some(file) = user {
            let bytes = std::fs::read(&file).map_err(|e| {
                err(
                    ErrorKind::ImportError,
                    format!("cannot read '{}': {}", file.display(), e),
                )
            })?;
            let src = String::from_utf8(bytes).map_err(|_| {
                err(
                    ErrorKind::ImportError,
                    format!("'{}' is not valid UTF-8", file.display()),
                )
            })?;
            let mdir = file.parent().map(|p| p.to_path_buf());
            return self.load_module(name, key, &file.display().to_string(), &src, mdir);
        }
        if let Some((_, src)) = STDLIB.iter().find(|(n, _)| *n == name) {
            let rel: String = path.iter().map(|p| &**p).collect::<Vec<_>>().join("/");
            let display = format!("<stdlib>/{rel}.dl");
            return self.in_stdlib(|i| i.load_module(name, key, &display, src, None));
        }
        Err(err(
            ErrorKind::ImportError,
            format!("No module named '{name}'"),
        ))
    }

    /// Parses, resolves and runs a module's source; the module is cached (under `key`)
    /// before it runs so circular imports see the partially initialised module.
    pub fn load_module(
        &mut self,
        name: &str,
        key: &str,
        display: &str,
        src: &str,
        dir: Option<std::path::PathBuf>,
    ) -> R<Rc<ModuleObj>> {
        let file = self.sources.add(display, src);
        let ast = crate::syntax::parse_module(src, file).map_err(|mut es| {
            let e = if es.is_empty() {
                crate::Error::new(ErrorKind::SyntaxError, "invalid syntax", None)
            } else {
                es.swap_remove(0)
            };
            Box::new(super::ExcInner {
                error: e,
                value: None,
                pending: None,
                frames: Vec::new(),
                missing: None,
            })
        })?;
        let m = Rc::new(ModuleObj::new(name, dir));
        super::gc::track_module(&m);
        m.set(&"__name__".into(), Value::str(name));
        let code = resolve_module(&ast, &m).map_err(|e| {
            Box::new(super::ExcInner {
                error: e,
                value: None,
                pending: None,
                frames: Vec::new(),
                missing: None,
            })
        })?;
        self.modules.insert(key.into(), m.clone());
        match self.run_code(&code, m.clone()) {
            Ok(_) => Ok(m),
            Err(mut e) => {
                self.modules.remove(key);
                if let Some(p) = e.pending.take() {
                    e.frames.push(crate::error::TraceFrame {
                        func: "<module>".into(),
                        span: p,
                    });
                }
                Err(e)
            }
        }
    }
}
