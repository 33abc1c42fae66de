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
    ("optim", include_str!("../../stdlib/optim.dl")),
    ("data", include_str!("../../stdlib/data.dl")),
    ("collections", include_str!("../../stdlib/collections.dl")),
    ("itertools", include_str!("../../stdlib/itertools.dl")),
    ("functools", include_str!("../../stdlib/functools.dl")),
    ("string", include_str!("../../stdlib/string.dl")),
    ("pathlib", include_str!("../../stdlib/pathlib.dl")),
    ("argparse", include_str!("../../stdlib/argparse.dl")),
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
    /// Imports (or returns the cached) module for a dotted path.
    pub fn import(&mut self, path: &[Name]) -> R<Rc<ModuleObj>> {
        let name: String = path.iter().map(|p| &**p).collect::<Vec<_>>().join(".");
        self.check_import_allowed(&name)?;
        if let Some(m) = self.modules.get(name.as_str()) {
            return Ok(m.clone());
        }
        let native = match name.as_str() {
            "math" => {
                let m = super::builtins::mathmod::math_module();
                super::builtins::mathmore::extend(&m);
                Some(m)
            }
            "time" => Some(super::builtins::mathmod::time_module()),
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
            "_plot" => Some(super::builtins::plotmod::plot_module()),
            "_tensorboard" => Some(super::builtins::tbmod::tensorboard_module()),
            "__future__" => Some(super::builtins::copymod::future_module()),
            _ => None,
        };
        if let Some(m) = native {
            self.modules.insert(name.as_str().into(), m.clone());
            return Ok(m);
        }
        let rel: String = path.iter().map(|p| &**p).collect::<Vec<_>>().join("/") + ".dl";
        if self.allow_fs {
            let dir = self
                .globals
                .dir
                .borrow()
                .clone()
                .or_else(|| std::env::current_dir().ok());
            if let Some(dir) = dir {
                let file = dir.join(&rel);
                // a sandboxed run never looks at the disk (not even a stat)
                let gate = crate::io::fs_gate::check(&file, crate::io::fs_gate::Access::Read);
                if gate.is_ok() && file.is_file() {
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
                    return self.load_module(&name, &file.display().to_string(), &src, mdir);
                }
            }
        }
        if let Some((_, src)) = STDLIB.iter().find(|(n, _)| *n == name) {
            return self.load_module(&name, &format!("<stdlib>/{rel}"), src, None);
        }
        Err(err(
            ErrorKind::ImportError,
            format!("No module named '{name}'"),
        ))
    }

    /// Parses, resolves and runs a module's source; the module is cached before it runs
    /// so circular imports see the partially initialised module.
    pub fn load_module(
        &mut self,
        name: &str,
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
        self.modules.insert(name.into(), m.clone());
        match self.run_code(&code, m.clone()) {
            Ok(_) => Ok(m),
            Err(mut e) => {
                self.modules.remove(name);
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
