//! `Engine`'s limits and safety switches: `Limits`, sandbox mode, file access,
//! `@compile` on/off, the interrupt handle and garbage collection.

use super::Engine;
use crate::interp::limits::Limits;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

impl Engine {
    /// A fresh engine with `limits` applied to every run.
    ///
    /// ```
    /// let limits = kiln::Limits { max_operations: Some(1000), ..Default::default() };
    /// let mut engine = kiln::Engine::with_limits(limits);
    /// assert!(engine.eval("for i in range(10**6):\n    pass").is_err());
    /// ```
    pub fn with_limits(limits: Limits) -> Engine {
        let mut e = Engine::new();
        e.limits = limits;
        e
    }

    /// Replaces the limits; they apply from the next run on.
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// engine.set_limits(kiln::Limits { max_call_depth: 10, ..Default::default() });
    /// let e = engine.eval("def f(n):\n    return f(n + 1)\nf(0)").unwrap_err();
    /// assert_eq!(e.kind, kiln::ErrorKind::RecursionError);
    /// ```
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// The limits in force.
    ///
    /// ```
    /// assert_eq!(kiln::Engine::new().limits().max_call_depth, 1000);
    /// ```
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Sandbox mode: no file access from scripts (imports from disk, the `io` module and
    /// with it `Module.save`/`load`), and `progress(...)` never draws on the host's
    /// terminal. Host-registered modules and functions stay available; `run_file` (the
    /// host reading a file) still works. The `time` module stays: reading the clocks is
    /// harmless, and `time.sleep` wakes for the wall-time limit and the interrupt handle.
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// engine.set_sandbox(true);
    /// let e = engine.eval("import io").unwrap_err();
    /// assert_eq!(e.kind, kiln::ErrorKind::ImportError);
    /// ```
    pub fn set_sandbox(&mut self, on: bool) {
        self.sandbox = on;
        self.interp.allow_fs = !on;
        self.interp.sandbox = on;
    }

    /// Whether sandbox mode is on.
    ///
    /// ```
    /// assert!(!kiln::Engine::new().is_sandboxed());
    /// ```
    pub fn is_sandboxed(&self) -> bool {
        self.sandbox
    }

    /// Turns `@compile` on or off for this engine (off: compiled functions run eagerly,
    /// as with `KILN_EAGER=1`).
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// engine.set_compile(false);
    /// assert_eq!(engine.eval_as::<i64>("compile(lambda x: x + 1)(2)").unwrap(), 3);
    /// ```
    pub fn set_compile(&mut self, on: bool) {
        self.interp.compile_enabled = on;
    }

    /// Checks every compiled call against an eager run of the same inputs (as
    /// `KILN_CHECK=1`; see the eager check in LANGUAGE.md).
    pub fn set_compile_check(&mut self, on: bool) {
        self.interp.compile_check = on;
    }

    /// The maximum Kiln call depth before RecursionError (default 1000); the same as
    /// [`Limits::max_call_depth`].
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// engine.set_max_depth(50);
    /// assert_eq!(engine.limits().max_call_depth, 50);
    /// ```
    pub fn set_max_depth(&mut self, n: usize) {
        self.limits.max_call_depth = n;
    }

    /// Whether imports may read `.dl` files from disk (see also [`Engine::set_sandbox`]).
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// engine.set_file_access(false);
    /// assert!(engine.eval("import my_local_module").is_err());
    /// ```
    pub fn set_file_access(&mut self, allowed: bool) {
        self.interp.allow_fs = allowed;
    }

    /// A flag another thread may set to interrupt the running script: it raises
    /// `KeyboardInterrupt` at the next check (loop iterations, calls, and between row
    /// blocks of a large matmul). The run that sees it clears it; one set while no
    /// script runs interrupts the next run.
    ///
    /// ```
    /// use std::sync::atomic::Ordering;
    /// let mut engine = kiln::Engine::new();
    /// let flag = engine.interrupt_handle();
    /// let t = std::thread::spawn(move || {
    ///     std::thread::sleep(std::time::Duration::from_millis(50));
    ///     flag.store(true, Ordering::Relaxed);
    /// });
    /// let e = engine.eval("while True:\n    pass").unwrap_err();
    /// t.join().unwrap();
    /// assert_eq!(e.kind, kiln::ErrorKind::KeyboardInterrupt);
    /// ```
    pub fn interrupt_handle(&self) -> Arc<AtomicBool> {
        self.interp.interrupt.clone()
    }

    /// Frees the reference cycles scripts left behind (a full collection; automatic
    /// collections also run as scripts allocate). Returns how many objects it freed.
    /// Values the host holds, and everything they reach, are never freed.
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// engine.eval("def f():\n    xs = []\n    xs.append(xs)\nf()").unwrap();
    /// assert!(engine.collect_garbage() >= 1);
    /// ```
    pub fn collect_garbage(&mut self) -> usize {
        crate::interp::gc::collect()
    }
}
