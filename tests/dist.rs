//! Data-parallel training on MPI (issue 28). With the `mpi` feature, the scripts in
//! tests/dist/ run under `mpirun --oversubscribe -np N` (N = 2 and 3), each rank being
//! this test binary re-entered as a Kiln runner (`rank_runner`, the CLI's run-and-finish
//! path, so the tests do not depend on how the CLI was built); one test runs the real
//! `kiln` CLI the same way. Without the feature, `dist.init_process_group()` must raise
//! a RuntimeError that says how to get MPI.

use std::io::Write;

/// Set (to the script and its arguments, tab-separated) in a child started by mpirun.
const CHILD_ENV: &str = "KILN_DIST_TEST_SCRIPT";

/// The rank side: runs the script given in CHILD_ENV as the CLI does, then leaves the
/// MPI world (aborting every rank when the script failed). A no-op in a normal run.
#[test]
fn rank_runner() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let argv: Vec<String> = spec.split('\t').map(str::to_string).collect();
    let mut e = kiln::Engine::new();
    e.set_argv(argv.clone());
    e.set_output(Box::new(|s| {
        let mut out = std::io::stdout();
        let _ = out.write_all(s.as_bytes());
        let _ = out.flush();
    }));
    let r = e.run_file(&argv[0]);
    if let Err(err) = &r {
        eprint!("{}", e.render_error(err));
    }
    kiln::dist::finish(r.is_ok());
}

#[cfg(not(feature = "mpi"))]
#[test]
fn without_mpi_init_raises_a_clear_runtime_error() {
    let mut e = kiln::Engine::new();
    let err = e
        .run_source("import dist\ndist.init_process_group()\n", "<t>")
        .expect_err("init_process_group must fail without MPI");
    assert_eq!(err.kind, kiln::ErrorKind::RuntimeError, "{err:?}");
    assert!(err.message.contains("--features mpi"), "{}", err.message);
    let v = e.eval("dist.is_available()").expect("is_available runs");
    assert!(matches!(v, kiln::Value::Bool(false)));
}

#[cfg(feature = "mpi")]
mod with_mpi {
    use super::CHILD_ENV;
    use std::path::PathBuf;
    use std::process::{Command, Output};
    use std::time::{Duration, Instant};

    fn script(name: &str) -> String {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/dist")
            .join(name)
            .display()
            .to_string()
    }

    /// `mpirun -np n` of this binary's rank_runner on `args` (script first).
    fn mpirun(n: usize, args: &[&str]) -> Output {
        let exe = std::env::current_exe().expect("test binary path");
        let mut c = Command::new("mpirun");
        mpi_flags(&mut c, n);
        c.arg(exe)
            .args([
                "rank_runner",
                "--exact",
                "--nocapture",
                "--test-threads=1",
                "-q",
            ])
            .env(CHILD_ENV, args.join("\t"));
        run_bounded(c)
    }

    fn mpi_flags(c: &mut Command, n: usize) {
        c.args([
            "--allow-run-as-root",
            "--oversubscribe",
            "--bind-to",
            "none",
            "-np",
        ])
        .arg(n.to_string())
        // containers often forbid the cross-memory-attach single copy
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .env("RAYON_NUM_THREADS", "1");
    }

    /// Runs `c`, failing the test when it takes over two minutes (a hang).
    fn run_bounded(mut c: Command) -> Output {
        let t0 = Instant::now();
        let mut child = c
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn mpirun (is Open MPI installed?)");
        loop {
            if child.try_wait().expect("wait").is_some() {
                return child.wait_with_output().expect("output");
            }
            if t0.elapsed() > Duration::from_secs(120) {
                let _ = child.kill();
                panic!("the run hung for 120 s: {c:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn text(o: &Output) -> String {
        format!(
            "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    }

    #[test]
    fn collectives_on_every_dtype_with_2_and_3_ranks() {
        for n in [2, 3] {
            let o = mpirun(n, &[&script("collectives.dl")]);
            let out = text(&o);
            assert!(o.status.success(), "{out}");
            assert!(
                out.contains(&format!("collectives ok on {n} ranks")),
                "{out}"
            );
        }
    }

    /// Rank 0's parameters after 20 steps, from one process on the whole batch, then
    /// from n ranks (each its shard) compared against them inside the script.
    fn equivalence(model: &str, modes: &[&str], ns: &[usize]) {
        let dir = tempfile::tempdir().expect("tempdir");
        let reference = dir.path().join("single.safetensors").display().to_string();
        let o = mpirun(1, &[&script("train.dl"), model, "single", &reference]);
        assert!(o.status.success(), "{}", text(&o));
        for &mode in modes {
            for &n in ns {
                let out_file = dir.path().join(format!("{mode}{n}.safetensors"));
                let out_file = out_file.display().to_string();
                let o = mpirun(
                    n,
                    &[&script("train.dl"), model, mode, &out_file, &reference],
                );
                let out = text(&o);
                assert!(o.status.success(), "{model} {mode} on {n} ranks: {out}");
                for r in 0..n {
                    assert!(out.contains(&format!("rank {r} ok {mode}")), "{out}");
                }
            }
        }
    }

    #[test]
    fn w5_mlp_ddp_matches_one_rank_on_the_whole_batch() {
        equivalence("mlp", &["ddp", "overlap", "accum"], &[2, 3]);
    }

    #[test]
    fn cnn_ddp_matches_one_rank_on_the_whole_batch() {
        equivalence("cnn", &["ddp"], &[2, 3]);
    }

    /// The compiled steps against one rank on the whole batch, and against eager DDP on
    /// the same 2 ranks.
    #[test]
    fn compiled_steps_under_ddp_match_one_rank_and_eager_ddp() {
        equivalence("mlp", &["split", "compiled"], &[2]);
        let dir = tempfile::tempdir().expect("tempdir");
        let eager = dir.path().join("eager.safetensors").display().to_string();
        let o = mpirun(2, &[&script("train.dl"), "mlp", "ddp", &eager]);
        assert!(o.status.success(), "{}", text(&o));
        for mode in ["split", "compiled"] {
            let out_file = dir.path().join(format!("{mode}.safetensors"));
            let out_file = out_file.display().to_string();
            let o = mpirun(2, &[&script("train.dl"), "mlp", mode, &out_file, &eager]);
            let out = text(&o);
            assert!(o.status.success(), "{mode} against eager DDP: {out}");
            for r in 0..2 {
                assert!(out.contains(&format!("rank {r} ok {mode}")), "{out}");
            }
        }
    }

    #[test]
    fn batchnorm_buffers_follow_rank_0() {
        for n in [2, 3] {
            let o = mpirun(n, &[&script("buffers.dl")]);
            let out = text(&o);
            assert!(o.status.success(), "{out}");
            for r in 0..n {
                assert!(out.contains(&format!("rank {r} buffers ok")), "{out}");
            }
        }
    }

    #[test]
    fn a_rank_that_raises_makes_every_rank_exit_with_an_error() {
        for n in [2, 3] {
            let t0 = Instant::now();
            let o = mpirun(n, &[&script("fail.dl"), "raise"]);
            let out = text(&o);
            assert!(!o.status.success(), "{out}");
            assert!(out.contains("ValueError: rank"), "{out}");
            assert!(!out.contains("unreachable"), "{out}");
            assert!(t0.elapsed() < Duration::from_secs(60), "{out}");
        }
    }

    #[test]
    fn a_rank_that_skips_a_collective_times_out_everywhere() {
        let t0 = Instant::now();
        let o = mpirun(2, &[&script("fail.dl"), "skip"]);
        let out = text(&o);
        assert!(!o.status.success(), "{out}");
        assert!(
            out.contains("dist.all_reduce timed out after 3.0 s on rank 0"),
            "{out}"
        );
        // the skipping rank sleeps 60 s: the abort must end it long before
        assert!(t0.elapsed() < Duration::from_secs(45), "{out}");
    }

    #[test]
    fn a_checkpoint_saved_by_rank_0_resumes_exactly() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = |f: &str| dir.path().join(f).display().to_string();
        let o = mpirun(
            2,
            &[
                &script("ckpt.dl"),
                "full",
                &p("ckpt.safetensors"),
                &p("full.safetensors"),
            ],
        );
        assert!(o.status.success(), "{}", text(&o));
        let o = mpirun(
            2,
            &[
                &script("ckpt.dl"),
                "resume",
                &p("ckpt.safetensors"),
                &p("resumed.safetensors"),
            ],
        );
        assert!(o.status.success(), "{}", text(&o));
        let full = std::fs::read(p("full.safetensors")).expect("full run's parameters");
        let resumed = std::fs::read(p("resumed.safetensors")).expect("resumed run's parameters");
        assert!(
            full == resumed,
            "the resumed run's parameters differ from the full run's"
        );
    }

    /// `mpirun -np 2 kiln script.dl` through the CLI itself (built with the feature by
    /// `cargo test --features mpi`, which builds the whole workspace).
    #[test]
    fn the_cli_runs_under_mpirun() {
        let exe = std::env::current_exe().expect("test binary path");
        let kiln = exe
            .parent()
            .and_then(|d| d.parent())
            .expect("target dir")
            .join("kiln");
        assert!(
            kiln.is_file(),
            "{} is missing: build the CLI (cargo test --release --features mpi)",
            kiln.display()
        );
        let mut c = Command::new("mpirun");
        mpi_flags(&mut c, 2);
        c.arg(&kiln).arg(script("collectives.dl"));
        let o = run_bounded(c);
        let out = text(&o);
        assert!(o.status.success(), "{out}");
        assert!(out.contains("collectives ok on 2 ranks"), "{out}");
        let mut c = Command::new("mpirun");
        mpi_flags(&mut c, 2);
        c.arg(&kiln).arg(script("fail.dl")).arg("raise");
        let o = run_bounded(c);
        assert!(!o.status.success(), "{}", text(&o));
    }
}
