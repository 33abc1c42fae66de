//! `kiln kernel`: a Jupyter kernel (messaging protocol 5.3 over ZeroMQ). `kiln kernel
//! install [--user | --prefix DIR]` writes the kernelspec; `kiln kernel -f FILE` serves
//! the connection file a front end wrote.

mod exec;
mod net;
mod wire;

use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

/// `kiln kernel ...` with the arguments after `kernel`.
pub fn main(args: &[String]) -> ExitCode {
    match args.first().map(String::as_str) {
        Some("install") => install(&args[1..]),
        Some("-f") if args.len() == 2 => serve(&args[1]),
        _ => {
            eprintln!(
                "kiln kernel: expected `install [--user | --prefix DIR]` or `-f CONNECTION.json`"
            );
            ExitCode::from(2)
        }
    }
}

/// The kernel_info_reply content: who we are and the language.
fn kernel_info() -> serde_json::Value {
    let v = env!("CARGO_PKG_VERSION");
    json!({
        "status": "ok",
        "protocol_version": wire::PROTOCOL_VERSION,
        "implementation": "kiln",
        "implementation_version": v,
        "language_info": {
            "name": "kiln",
            "version": v,
            "mimetype": "text/x-python",
            "file_extension": ".dl",
            "pygments_lexer": "python",
            "codemirror_mode": "python",
            "nbconvert_exporter": "python",
        },
        "banner": format!("Kiln {v}: Python syntax, PyTorch-style tensors, @compile"),
        "help_links": [],
    })
}

fn serve(path: &str) -> ExitCode {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return fail(&format!("cannot read {path}: {e}")),
    };
    let info = match wire::ConnectionInfo::parse(&text) {
        Ok(i) => i,
        Err(e) => return fail(&format!("bad connection file {path}: {e}")),
    };
    let signer = match wire::Signer::new(&info) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let mut engine = kiln::Engine::new();
    engine.set_argv(vec![String::new()]);
    let flag = engine.interrupt_handle();
    // SIGINT (the front end's default interrupt) stops the running cell; the kernel lives on
    let sigint = flag.clone();
    let _ = ctrlc::set_handler(move || sigint.store(true, Ordering::Relaxed));
    let net = match net::start(info, signer.clone(), flag, kernel_info()) {
        Ok(n) => n,
        Err(e) => return fail(&e),
    };
    exec::Kernel::new(engine, signer, net, kernel_info()).run();
    ExitCode::SUCCESS
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("kiln kernel: {msg}");
    ExitCode::from(1)
}

/// `kiln kernel install`: writes `kernels/kiln/kernel.json` under the user's Jupyter data
/// directory (`--user`), `DIR/share/jupyter` (`--prefix DIR`) or the system one.
fn install(args: &[String]) -> ExitCode {
    let base = match args {
        [] => PathBuf::from("/usr/local/share/jupyter"),
        [u] if u == "--user" => match user_data_dir() {
            Some(d) => d,
            None => return fail("cannot find the user's Jupyter data directory (HOME is not set)"),
        },
        [p, dir] if p == "--prefix" => PathBuf::from(dir).join("share").join("jupyter"),
        _ => {
            eprintln!("kiln kernel install: expected no option, `--user` or `--prefix DIR`");
            return ExitCode::from(2);
        }
    };
    let exe = match std::env::current_exe().and_then(|p| p.canonicalize()) {
        Ok(p) => p,
        Err(e) => return fail(&format!("cannot find the kiln executable: {e}")),
    };
    let dir = base.join("kernels").join("kiln");
    let spec = json!({
        "argv": [exe.to_string_lossy(), "kernel", "-f", "{connection_file}"],
        "display_name": "Kiln",
        "language": "kiln",
        "interrupt_mode": "signal",
        "metadata": {"debugger": false},
    });
    let text = serde_json::to_string_pretty(&spec).unwrap_or_default();
    let written = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(dir.join("kernel.json"), text + "\n"));
    match written {
        Ok(()) => {
            println!("Installed kernelspec kiln in {}", dir.display());
            ExitCode::SUCCESS
        }
        Err(e) => fail(&format!("cannot write {}: {e}", dir.display())),
    }
}

/// Jupyter's per-user data directory: `$JUPYTER_DATA_DIR`, else `~/Library/Jupyter` on
/// macOS, else `$XDG_DATA_HOME/jupyter` or `~/.local/share/jupyter`.
fn user_data_dir() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(d) = env("JUPYTER_DATA_DIR") {
        return Some(d);
    }
    let home = env("HOME")?;
    if cfg!(target_os = "macos") {
        return Some(home.join("Library").join("Jupyter"));
    }
    Some(
        env("XDG_DATA_HOME")
            .unwrap_or_else(|| home.join(".local").join("share"))
            .join("jupyter"),
    )
}
