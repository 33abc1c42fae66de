//! The Python-library modules in a sandboxed engine: every file-system call (`open`,
//! `os`, `os.path`, `pathlib`) raises PermissionError and touches nothing, while the
//! pure modules (json, re, str methods) keep working; and hostile inputs to the new
//! builtins raise exceptions instead of panicking.

use kiln::{Engine, ErrorKind};

fn sandboxed() -> Engine {
    let mut e = Engine::new();
    e.set_sandbox(true);
    e
}

#[test]
fn sandbox_refuses_file_access_with_permission_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let target = dir.path().join("made.txt");
    let t = target.display().to_string();
    let d = dir.path().display().to_string();
    let cases = [
        format!("open({t:?}, 'w')"),
        format!("open({t:?})"),
        format!("import os\nos.listdir({d:?})"),
        format!("import os\nos.makedirs({d:?} + '/x')"),
        format!("import os\nos.remove({t:?})"),
        format!("import os.path\nos.path.exists({t:?})"),
        "import os\nos.getcwd()".to_string(),
        format!("from pathlib import Path\nPath({t:?}).write_text('x')"),
        format!("from pathlib import Path\nPath({d:?}).iterdir()"),
    ];
    for src in &cases {
        let err = sandboxed().eval(src).expect_err(src);
        assert_eq!(err.kind, ErrorKind::PermissionError, "{src}: {err:?}");
    }
    assert!(!target.exists(), "a sandboxed open() created a file");
    assert!(!dir.path().join("x").exists());
    // the same calls work with file access on
    let mut e = Engine::new();
    e.eval(&format!("f = open({t:?}, 'w')\nf.write('hi')\nf.close()"))
        .expect("open for writing");
    assert_eq!(std::fs::read_to_string(&target).expect("written"), "hi");
}

#[test]
fn sandbox_keeps_the_pure_modules() {
    let mut e = sandboxed();
    let v: String = e
        .eval_as(
            "import json\nimport re\njson.dumps({'a': re.findall(r'\\d', 'a1b2')}) + 'x'.zfill(3)",
        )
        .unwrap_or_else(|err| panic!("{err:?}"));
    assert_eq!(v, "{\"a\": [\"1\", \"2\"]}00x");
    // no environment variables leak into a sandboxed script
    let n: i64 = e
        .eval_as("import os\nlen(os.environ)")
        .unwrap_or_else(|err| panic!("{err:?}"));
    assert_eq!(n, 0);
}

#[test]
fn hostile_arguments_raise_instead_of_panicking() {
    let cases = [
        ("'abc'.find('b', 10**18, -10**18)", None),
        ("'%*d' % (10**9, 1)", None),
        ("'%.*d' % (10**12, 1)", None),
        ("pow(5, 3, -2**63)", None),
        (
            "import sys\nf = open(sys.argv[0] if False else '/dev/null')\nf.seek(10**15)\nf.read()",
            None,
        ),
        ("'{:{}}'.format(1, '{' * 50)", None),
        ("'%(a' % {}", Some(ErrorKind::ValueError)),
        ("'a\\tb'.expandtabs(10**12)", None),
        ("pow(3, -1, 6)", Some(ErrorKind::ValueError)),
        ("pow(2, 10**18, 10**9 + 7)", None),
        ("chr(-1)", None),
        ("import json\njson.loads('[' * 100000)", None),
        (
            "import json\nx = []\nfor i in range(2000):\n    x = [x]\njson.dumps(x)",
            None,
        ),
        (
            "import re\nre.compile('(' * 1000)",
            Some(ErrorKind::ValueError),
        ),
        (
            "import re\nre.sub('a', '\\\\g<9>', 'a')",
            Some(ErrorKind::ValueError),
        ),
        (
            "import re\nre.match('a', 'a').group(5)",
            Some(ErrorKind::IndexError),
        ),
        (
            "import copy\nx = []\nfor i in range(3000):\n    x = [x]\ncopy.deepcopy(x)",
            None,
        ),
        (
            "'é'.center(3, 'ü').translate({233: 10**9})",
            Some(ErrorKind::ValueError),
        ),
    ];
    for (src, kind) in cases {
        let mut e = Engine::new();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| e.eval(src)));
        let r = r.unwrap_or_else(|_| panic!("panicked on {src}"));
        if let Some(k) = kind {
            assert_eq!(r.expect_err(src).kind, k, "{src}");
        }
    }
}
