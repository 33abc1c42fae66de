//! Compiling a kernel with cranelift-jit, and the owner of the resulting machine code.

pub(super) mod accum;
pub(super) mod body;
pub(super) mod calls64;
pub mod codegen;
pub mod consts;
pub mod gelu_avx2;
pub mod kernel;
pub(super) mod lanefn;
pub(super) mod mathfn;
pub(super) mod mathgelu;
pub mod parallel;
// The scalar reference evaluator: the truth of the kernel tests (`internals`).
#[cfg(feature = "internals")]
pub mod reference;
pub(super) mod sched;
pub(super) mod trig_table;
pub mod views;

use crate::compile::jit::consts::Splat4;
use crate::compile::jit::kernel::Kernel;
use crate::error::{Error, ErrorKind, Result};
use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::ir::types::{I32, I64};
use cranelift_codegen::ir::{AbiParam, UserFuncName};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::FunctionBuilderContext;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The argument block of a compiled kernel (layout read by the generated code).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KernelArgs {
    /// Base pointers: inputs, outputs, then the reduction output.
    pub ptrs: *const *mut u8,
    /// `rank` extents.
    pub extents: *const i64,
    /// Element strides: `rank` per input and output, then `rank - dims` for the reduction.
    pub strides: *const i64,
    /// The range of dimension 0 this call covers.
    pub start: i64,
    pub end: i64,
    /// The kernel's constant table.
    pub consts: *const Splat4,
}

/// The native entry point; returns 0 on success.
pub type KernelFn = unsafe extern "C" fn(*const KernelArgs) -> i32;

/// A compiled kernel; owns its JIT memory and frees it when dropped.
pub struct CompiledKernel {
    module: Option<JITModule>,
    pub(crate) func: KernelFn,
    pub(crate) kernel: Kernel,
    /// Read by the machine code at every run; never changed after compilation.
    pub(crate) consts: Vec<Splat4>,
    compile_time: Duration,
}

impl CompiledKernel {
    /// The kernel IR this was compiled from.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// Wall time spent in validation, code generation and linking.
    pub fn compile_time(&self) -> Duration {
        self.compile_time
    }
}

// SAFETY: after `compile` returns, the module is never used through `&self` (only the
// finalized, immutable machine code is called, which touches no shared state); it is
// only freed in `drop`, with exclusive access. Its memory is not tied to a thread.
unsafe impl Send for CompiledKernel {}
unsafe impl Sync for CompiledKernel {}

impl Drop for CompiledKernel {
    fn drop(&mut self) {
        if let Some(module) = self.module.take() {
            // SAFETY: `func` points into this module's memory and is never called again:
            // it is only reachable through `self`, which is being dropped.
            unsafe { module.free_memory() };
        }
    }
}

impl std::fmt::Debug for CompiledKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledKernel")
            .field("kernel", &self.kernel)
            .field("compile_time", &self.compile_time)
            .finish()
    }
}

fn jit_error(what: &str, detail: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::RuntimeError,
        format!("JIT {what}: {detail}"),
        None,
    )
}

/// Whether the host ISA lowers `fma` to one instruction (else it would be a libcall).
fn native_fma(isa: &OwnedTargetIsa) -> bool {
    let flag = |name: &str| {
        isa.isa_flags()
            .iter()
            .any(|v| v.name == name && v.as_bool() == Some(true))
    };
    flag("has_avx") && flag("has_fma")
}

/// How a kernel's function is optimized.
#[derive(Clone, Copy)]
enum Opt {
    /// Cranelift's optimizer at `opt_level` speed, during compilation.
    Speed,
    /// The optimizer run first, then [`sched::interleave`]; compiled at `opt_level` none
    /// (which skips the optimizer, whose placement of pure values would undo the order).
    Scheduled,
}

/// The host ISA for `opt`, built once each: verifier only in debug builds, no PIC.
fn host_isa(opt: Opt) -> Result<OwnedTargetIsa> {
    static ISA: OnceLock<std::result::Result<OwnedTargetIsa, String>> = OnceLock::new();
    static ISA_NONE: OnceLock<std::result::Result<OwnedTargetIsa, String>> = OnceLock::new();
    let none = matches!(opt, Opt::Scheduled);
    let cell = if none { &ISA_NONE } else { &ISA };
    let isa = cell.get_or_init(|| {
        let mut flags = settings::builder();
        let verifier = if cfg!(debug_assertions) {
            "true"
        } else {
            "false"
        };
        for (name, value) in [
            ("opt_level", if none { "none" } else { "speed" }),
            ("enable_verifier", verifier),
            ("is_pic", "false"),
            ("use_colocated_libcalls", "false"),
        ] {
            flags.set(name, value).map_err(|e| e.to_string())?;
        }
        let builder = cranelift_native::builder().map_err(|e| e.to_string())?;
        builder
            .finish(settings::Flags::new(flags))
            .map_err(|e| e.to_string())
    });
    isa.clone().map_err(|e| jit_error("target", e))
}

/// A JIT module with `kernel`'s function generated and defined (not yet finalized).
struct Defined {
    module: JITModule,
    id: cranelift_module::FuncId,
    consts: Vec<Splat4>,
}

/// Defines `kernel`'s function; with `want_disasm`, also returns its machine code as text.
fn define(kernel: &Kernel, want_disasm: bool) -> Result<(Defined, Option<String>)> {
    let kinds = kernel.validate()?;
    // Elementwise f32 kernels (no reduction) get their unrolled chains interleaved (f64
    // kernels call functions, across which interleaved chains would be spilled).
    let opt = if kernel.reduction.is_none() && kernel.dtype == kernel::FloatType::F32 {
        Opt::Scheduled
    } else {
        Opt::Speed
    };
    let isa = host_isa(opt)?;
    let fma = native_fma(&isa);
    let mut module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
    let mut ctx = module.make_context();
    ctx.set_disasm(want_disasm);
    ctx.func.signature.params.push(AbiParam::new(I64));
    ctx.func.signature.returns.push(AbiParam::new(I32));
    let id = module
        .declare_function("kiln_kernel", Linkage::Local, &ctx.func.signature)
        .map_err(|e| jit_error("declare", e))?;
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    let mut fctx = FunctionBuilderContext::new();
    let consts = codegen::build(
        kernel,
        &kinds,
        &mut ctx.func,
        &mut fctx,
        module.target_config(),
        fma,
    );
    if let Opt::Scheduled = opt {
        let speed = host_isa(Opt::Speed)?;
        if let Err(e) = ctx.optimize(&*speed, &mut ControlPlane::default()) {
            // SAFETY: nothing from this module has been handed out.
            unsafe { module.free_memory() };
            return Err(jit_error("optimize", format!("{e:?}")));
        }
        sched::interleave(&mut ctx.func);
    }
    if let Err(e) = module.define_function(id, &mut ctx) {
        // SAFETY: nothing from this module has been handed out.
        unsafe { module.free_memory() };
        return Err(jit_error("compile", format!("{e:?}")));
    }
    let disasm = ctx.compiled_code().and_then(|c| c.vcode.clone());
    Ok((Defined { module, id, consts }, disasm))
}

/// The machine code Cranelift generates for `kernel` on this host, as text (one
/// instruction per line, blocks labelled); for inspecting and testing code quality
/// (`internals`).
#[cfg(feature = "internals")]
pub fn disassemble(kernel: &Kernel) -> Result<String> {
    let (d, disasm) = define(kernel, true)?;
    // SAFETY: nothing from this module has been handed out.
    unsafe { d.module.free_memory() };
    disasm.ok_or_else(|| jit_error("disassemble", "no disassembly produced"))
}

/// Validates and compiles `kernel` to native code.
/// The most kernels [`compile_shared`] keeps (their machine code lives as long as the
/// process; past this, kernels are compiled afresh and freed with their graph).
const SHARED_MAX: usize = 4096;

/// [`compile`], reusing the machine code of an identical kernel compiled before in this
/// process: a graph's Adam updates of same-rank parameters are one kernel, and a
/// function recompiled with symbolic sizes (or a second function over the same layers)
/// finds its kernels compiled. A kernel's code depends only on its IR (sizes are run
/// arguments), so equal IR means equal code.
pub fn compile_shared(kernel: &Kernel) -> Result<std::sync::Arc<CompiledKernel>> {
    use std::sync::{Arc, Mutex};
    static SHARED: Mutex<Vec<Arc<CompiledKernel>>> = Mutex::new(Vec::new());
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(k) = shared.iter().find(|k| k.kernel == *kernel) {
        return Ok(k.clone());
    }
    let k = Arc::new(compile(kernel)?);
    if shared.len() < SHARED_MAX {
        shared.push(k.clone());
    }
    Ok(k)
}

pub fn compile(kernel: &Kernel) -> Result<CompiledKernel> {
    let t0 = Instant::now();
    let (
        Defined {
            mut module,
            id,
            consts,
        },
        _,
    ) = define(kernel, false)?;
    if let Err(e) = module.finalize_definitions() {
        // SAFETY: nothing from this module has been handed out.
        unsafe { module.free_memory() };
        return Err(jit_error("compile", format!("{e:?}")));
    }
    let code = module.get_finalized_function(id);
    // SAFETY: the function was built with the `KernelFn` signature (one pointer-sized
    // argument, an i32 result, the platform's C calling convention).
    let func = unsafe { std::mem::transmute::<*const u8, KernelFn>(code) };
    Ok(CompiledKernel {
        module: Some(module),
        func,
        kernel: kernel.clone(),
        consts,
        compile_time: t0.elapsed(),
    })
}
