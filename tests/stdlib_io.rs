//! The script-level `io` module: files byte for byte as NumPy and the safetensors
//! package write them (fixtures from tests/data/gen_stdlib_fixtures.py), the reference
//! package's file read back, corrupt files, and interrupted writes (a child process
//! whose file-size limit stops the save part-way) that leave the old file intact.

use kiln::{Engine, Value};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// A fresh, empty directory for one test.
fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kiln_stdlib_io_{tag}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// Runs `src` with the globals DIR (the scratch dir) and DATA (tests/data); returns what
/// it printed, or the rendered error.
fn run(src: &str, dir: &Path) -> Result<String, String> {
    let mut e = Engine::new();
    let out = Rc::new(RefCell::new(String::new()));
    let sink = out.clone();
    e.set_output(Box::new(move |s| sink.borrow_mut().push_str(s)));
    e.set_global("DIR", Value::str(&dir.display().to_string()));
    e.set_global("DATA", Value::str(&data("").display().to_string()));
    match e.run_source(src, "<test>") {
        Ok(_) => Ok(out.borrow().clone()),
        Err(err) => Err(e.render_error(&err)),
    }
}

fn read(p: impl AsRef<Path>) -> Vec<u8> {
    std::fs::read(p.as_ref()).unwrap_or_else(|e| panic!("{}: {e}", p.as_ref().display()))
}

const STATE: &str = r#"
import io
w = arange(6).float().reshape(2, 3) / 4
step = tensor([7, -3])
mask = tensor([[True], [False]])
"#;

#[test]
fn npy_files_match_numpy_byte_for_byte() {
    let dir = scratch("npy");
    let src = format!(
        "{STATE}io.save_npy(DIR + '/w.npy', w)\nio.save_npy(DIR + '/step.npy', step)\n\
         io.save_npy(mask, DIR + '/mask.npy')\n\
         io.save_npy(DIR + '/wt.npy', w.T.T[:, :])\n"
    );
    run(&src, &dir).unwrap();
    assert_eq!(read(dir.join("w.npy")), read(data("stdlib_w.npy")));
    assert_eq!(read(dir.join("step.npy")), read(data("stdlib_step.npy")));
    assert_eq!(read(dir.join("mask.npy")), read(data("stdlib_mask.npy")));
    assert_eq!(read(dir.join("wt.npy")), read(data("stdlib_w.npy")));
}

#[test]
fn npy_files_load_as_tensors() {
    let dir = scratch("npyload");
    let out = run(
        "import io\n\
         a = io.load_npy(DATA + '/f32_2x3.npy')\nprint(a.dtype, a.shape, a.tolist())\n\
         b = io.load_npy(DATA + '/i64_5.npy')\nprint(b.dtype, b.tolist())\n\
         c = io.load_npy(DATA + '/bool_2x2.npy')\nprint(c.dtype, c.tolist())\n\
         f = io.load_npy(DATA + '/f32_fortran_2x3.npy')\nprint(f.tolist())\n",
        &dir,
    )
    .unwrap();
    // gen_fixtures.py: arange(6).reshape(2, 3) * 0.5 - 1; [-2, -1, 0, 1, 2**40]; eye-like
    // bools; a Fortran-order array NumPy shows as [[0, 1, 2], [3, 4, 5]].
    assert_eq!(
        out,
        "torch.float32 torch.Size([2, 3]) [[-1.0, -0.5, 0.0], [0.5, 1.0, 1.5]]\n\
         torch.int64 [-2, -1, 0, 1, 1099511627776]\n\
         torch.bool [[True, False], [False, True]]\n\
         [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]\n"
    );
}

#[test]
fn safetensors_file_matches_the_reference_package() {
    let dir = scratch("st");
    let src = format!(
        "{STATE}io.save_safetensors({{'w': w, 'step': step, 'mask': mask}}, DIR + '/s.safetensors', \
         metadata={{'format': 'pt'}})\n"
    );
    run(&src, &dir).unwrap();
    assert_eq!(
        read(dir.join("s.safetensors")),
        read(data("stdlib_state.safetensors"))
    );
}

#[test]
fn reads_the_reference_packages_file() {
    let dir = scratch("stref");
    let out = run(
        "import io\nd = io.load_safetensors(DATA + '/reference.safetensors')\n\
         for k, v in d.items():\n    print(k, v.dtype, v.tolist())\n",
        &dir,
    )
    .unwrap();
    // gen_fixtures.py: float16 is widened to float32; int32 loads as int32 (issue 22);
    // dtypes print as torch's.
    assert_eq!(
        out,
        "half torch.float32 [1.0, -0.5, 65504.0, 5.960464477539063e-08]\n\
         ids32 torch.int32 [1, -2, 3]\n\
         mask torch.bool [[True], [False]]\n\
         scalar torch.float32 2.5\n\
         step torch.int64 [7, -3]\n\
         weight torch.float32 [[0.0, 0.25, 0.5], [0.75, 1.0, 1.25]]\n"
    );
}

#[test]
fn module_save_and_load_round_trip() {
    let dir = scratch("module");
    let out = run(
        "import io\nimport nn\nmanual_seed(0)\n\
         m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))\n\
         m.save(DIR + '/m.safetensors')\n\
         print(sorted(io.load_safetensors(DIR + '/m.safetensors').keys()))\n\
         m2 = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))\n\
         x = randn(5, 3)\nprint((m2(x) - m(x)).abs().max().item() > 0)\n\
         m2.load(DIR + '/m.safetensors')\nprint((m2(x) - m(x)).abs().max().item())\n",
        &dir,
    )
    .unwrap();
    assert_eq!(
        out,
        "['0.bias', '0.weight', '2.bias', '2.weight']\nTrue\n0.0\n"
    );
}

#[test]
fn corrupt_and_missing_files_raise_clear_errors() {
    let dir = scratch("corrupt");
    let good = read(data("stdlib_w.npy"));
    std::fs::write(dir.join("trunc.npy"), &good[..good.len() - 3]).unwrap();
    let st = read(data("stdlib_state.safetensors"));
    std::fs::write(dir.join("trunc.safetensors"), &st[..40]).unwrap();
    let out = run(
        "import io\n\
         for f in [io.load_npy, io.load_safetensors]:\n\
         \x20   for name in ['trunc.npy', 'trunc.safetensors', 'missing.npy']:\n\
         \x20       try:\n\
         \x20           f(DIR + '/' + name)\n\
         \x20           print('loaded', name)\n\
         \x20       except ValueError as e:\n\
         \x20           print('ValueError', name)\n\
         \x20       except OSError as e:\n\
         \x20           print('OSError', name)\n\
         try:\n    io.save_npy(DIR + '/x.npy', [1, 2])\nexcept TypeError as e:\n    print(e)\n\
         try:\n    io.save_safetensors({'a': 1}, DIR + '/x.st')\nexcept TypeError as e:\n    print(e)\n",
        &dir,
    )
    .unwrap();
    assert_eq!(
        out,
        "ValueError trunc.npy\nValueError trunc.safetensors\nOSError missing.npy\n\
         ValueError trunc.npy\nValueError trunc.safetensors\nOSError missing.npy\n\
         save_npy() expected a Tensor, not list\n\
         save_safetensors() expected a Tensor, not int\n"
    );
    assert!(!dir.join("x.npy").exists() && !dir.join("x.st").exists());
}

const CHILD_ENV: &str = "KILN_STDLIB_IO_CHILD_DIR";

/// In the child process: overwrite the old files with ones far larger than the
/// file-size limit the parent set.
fn child_save(dir: &str) {
    let out = run(
        "import io\nbig = zeros(200000)\n\
         try:\n    io.save_npy(DIR + '/old.npy', big)\nexcept OSError as e:\n    print('OSError')\n\
         try:\n    io.save_safetensors({'w': big}, DIR + '/old.safetensors')\n\
         except OSError as e:\n    print('OSError')\n",
        Path::new(dir),
    );
    print!("{}", out.unwrap_or_else(|e| e));
}

/// Runs this test binary's `interrupted_saves_keep_the_old_file` as a child under a
/// 16-block file-size limit; `ignore_xfsz` decides whether the kernel kills it mid-write
/// (SIGXFSZ, as a crash would) or the write fails with EFBIG.
fn child(dir: &Path, ignore_xfsz: bool) -> std::process::Output {
    let exe = std::env::current_exe().expect("test binary path");
    let trap = if ignore_xfsz { "trap '' XFSZ; " } else { "" };
    Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{trap}ulimit -f 16; exec \"$0\" interrupted_saves_keep_the_old_file --exact --nocapture --test-threads=1"
        ))
        .arg(exe)
        .env(CHILD_ENV, dir)
        .output()
        .expect("spawn child")
}

#[test]
fn interrupted_saves_keep_the_old_file() {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        child_save(&dir);
        return;
    }
    for ignore_xfsz in [false, true] {
        let dir = scratch(if ignore_xfsz { "efbig" } else { "killed" });
        run(
            "import io\nio.save_npy(DIR + '/old.npy', arange(4).float())\n\
             io.save_safetensors({'w': arange(4).float()}, DIR + '/old.safetensors')\n",
            &dir,
        )
        .unwrap();
        let (npy, st) = (read(dir.join("old.npy")), read(dir.join("old.safetensors")));
        let out = child(&dir, ignore_xfsz);
        let stdout = String::from_utf8_lossy(&out.stdout);
        if ignore_xfsz {
            assert!(out.status.success(), "{stdout}");
            assert_eq!(stdout.matches("OSError").count(), 2, "{stdout}");
            // A failed save removes its temporary file.
            let names: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
            assert_eq!(names.len(), 2, "{names:?}");
        } else {
            assert!(!out.status.success(), "the child was not stopped: {stdout}");
        }
        assert_eq!(read(dir.join("old.npy")), npy);
        assert_eq!(read(dir.join("old.safetensors")), st);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
