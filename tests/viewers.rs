//! The viewers from outside Kiln: event files read by the `tensorboard` package's own
//! loader (a Python with `tensorboard`: `KILN_VIEW_PYTHON`, else
//! `target/view-venv/bin/python`, which .ci/run creates; without it a `SKIPPED:` line
//! says the check did not run), and the sandbox refusing log and plot files.

use kiln::{Engine, ErrorKind};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kiln-view-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// The Python that has `tensorboard`, if any.
fn python() -> Option<PathBuf> {
    let cands = [
        std::env::var_os("KILN_VIEW_PYTHON").map(PathBuf::from),
        Some(root().join("target/view-venv/bin/python")),
    ];
    let found = cands.into_iter().flatten().find(|p| {
        Command::new(p)
            .args([
                "-c",
                "import tensorboard.backend.event_processing.event_file_loader",
            ])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if found.is_none() {
        use std::io::Write;
        let _ = writeln!(
            std::io::stdout(),
            "\nSKIPPED: the tensorboard-package check of tests/viewers.rs (no Python with \
             tensorboard; set KILN_VIEW_PYTHON or run .ci/run, which creates target/view-venv)."
        );
    }
    found
}

fn run(src: &str, argv1: &str, sandbox: bool) -> Result<(), kiln::Error> {
    let mut e = Engine::new();
    e.set_output(Box::new(|_| {}));
    e.set_sandbox(sandbox);
    e.set_argv(vec!["t.dl".into(), argv1.into()]);
    e.run_source(src, "t.dl").map(|_| ())
}

#[test]
fn the_tensorboard_package_reads_kiln_event_files() {
    let dir = temp_dir("tb");
    let src = "import sys\nfrom utils.tensorboard import SummaryWriter\n\
               w = SummaryWriter(sys.argv[1])\n\
               w.add_scalar('loss', 0.5, 1)\n\
               w.add_histogram('w', [1.0, 2.0, 2.0, 3.0], 2, bins=4)\n\
               w.add_text('note', 'hi', 3)\n\
               w.add_image('img', tensor([[[0.0, 1.0], [0.5, 0.25]]]), 4)\n\
               w.close()\n";
    run(src, dir.to_str().expect("utf-8 temp dir"), false).expect("script runs");
    let file = std::fs::read_dir(&dir)
        .expect("log dir")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_file())
        .expect("an event file");
    let Some(py) = python() else { return };
    let out = Command::new(py)
        .arg(root().join("tests/refs/tb_read.py"))
        .arg(&file)
        .output()
        .expect("python runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = "version brain.Event:2\n\
                scalar 1 loss 0.5\n\
                histo 2 w [0.0, 1.0, 0.0, 2.0, 1.0] [1.0, 1.5, 2.0, 2.5, 3.0] 4.0\n\
                text 3 note/text_summary text ['hi']\n\
                image 4 img 2 2 3\n";
    assert_eq!(text, want);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_sandboxed_engine_writes_no_logs_and_no_plots() {
    let dir = temp_dir("sandbox");
    let d = dir.to_str().expect("utf-8 temp dir");
    for src in [
        "import sys\nfrom utils.tensorboard import SummaryWriter\nSummaryWriter(sys.argv[1] + '/r')\n",
        "import sys\nimport matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.savefig(sys.argv[1] + '/p.png')\n",
    ] {
        let e = run(src, d, true).expect_err("refused");
        assert_eq!(e.kind, ErrorKind::PermissionError, "{}", e.message);
    }
    assert_eq!(std::fs::read_dir(&dir).expect("dir").count(), 0);
    let _ = std::fs::remove_dir_all(&dir);
}
