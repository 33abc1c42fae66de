//! The embedding API: conversions both ways, typed host functions and their errors,
//! native modules, output redirection, error rendering, sandbox mode, tensor memory
//! caps and a long native kernel interrupted from another thread.

use kiln::embed::NativeModule;
use kiln::tensor::{creation, DType, Tensor};
use kiln::{Engine, Error, ErrorKind, Limits, Value};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

fn quiet() -> Engine {
    let mut e = Engine::new();
    e.set_output(Box::new(|_| {}));
    e
}

#[test]
fn values_round_trip() {
    let mut e = quiet();
    e.set("f", 2.5f64);
    e.set("i", -7i64);
    e.set("b", true);
    e.set("s", "héllo");
    e.set("v", vec![vec![1i64, 2], vec![3]]);
    e.set("o", None::<i64>);
    e.set("t", (1i64, "x", 0.5f32));
    assert_eq!(e.get::<f64>("f").unwrap(), 2.5);
    assert_eq!(e.get::<i64>("i").unwrap(), -7);
    assert!(e.get::<bool>("b").unwrap());
    assert_eq!(e.get::<String>("s").unwrap(), "héllo");
    assert_eq!(
        e.get::<Vec<Vec<i64>>>("v").unwrap(),
        vec![vec![1, 2], vec![3]]
    );
    assert_eq!(e.get::<Option<i64>>("o").unwrap(), None);
    assert_eq!(
        e.get::<(i64, String, f64)>("t").unwrap(),
        (1, "x".to_string(), 0.5)
    );
    // The script sees the Python types.
    let types: Vec<String> = e
        .eval_as("[type(x).__name__ for x in (f, i, b, s, v, o, t)]")
        .unwrap();
    assert_eq!(
        types,
        ["float", "int", "bool", "str", "list", "NoneType", "tuple"]
    );
    // int widens to float, not the other way.
    assert_eq!(e.get::<f64>("i").unwrap(), -7.0);
    let err = e.get::<i64>("f").unwrap_err();
    assert_eq!(err.kind, ErrorKind::TypeError);
    assert_eq!(err.message, "global 'f' must be int, not float");
    assert_eq!(e.get::<i64>("nope").unwrap_err().kind, ErrorKind::NameError);
    assert_eq!(e.get::<i32>("big").unwrap_err().kind, ErrorKind::NameError);
    e.set("big", 1i64 << 40);
    assert_eq!(e.get::<i32>("big").unwrap_err().kind, ErrorKind::TypeError);
    assert_eq!(e.get::<usize>("i").unwrap_err().kind, ErrorKind::TypeError);
}

#[test]
fn call_with_tuples_and_values() {
    let mut e = quiet();
    e.eval("def f(a, b, c=10):\n    return (a + b) * c\nclass P:\n    def __init__(self, x):\n        self.x = x\n    def get(self):\n        return self.x")
        .unwrap();
    assert_eq!(e.call::<_, i64>("f", (1i64, 2i64)).unwrap(), 30);
    assert_eq!(e.call::<_, f64>("f", (1i64, 2.5, 2i64)).unwrap(), 7.0);
    assert_eq!(
        e.call::<_, i64>("f", vec![Value::Int(1), Value::Int(1)])
            .unwrap(),
        20
    );
    let p: Value = e.call("P", (5i64,)).unwrap();
    e.set_global("p", p);
    assert_eq!(e.eval_as::<i64>("p.get()").unwrap(), 5);
    let err = e.call::<_, Value>("f", ()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::TypeError);
    assert_eq!(
        e.call::<_, Value>("missing", ()).unwrap_err().kind,
        ErrorKind::NameError
    );
    e.set("n", 3i64);
    assert_eq!(
        e.call::<_, Value>("n", ()).unwrap_err().kind,
        ErrorKind::TypeError
    );
    // A result of the wrong type is a TypeError, not a panic.
    assert_eq!(
        e.call::<_, String>("f", (1i64, 2i64)).unwrap_err().kind,
        ErrorKind::TypeError
    );
}

#[test]
fn host_functions_check_arity_and_types() {
    let mut e = quiet();
    e.register_fn("scale", |v: Vec<f64>, k: f64| -> Vec<f64> {
        v.iter().map(|x| x * k).collect()
    });
    e.register_fn("greet", |name: String, n: Option<i64>| {
        format!("{}{}", name, "!".repeat(n.unwrap_or(1) as usize))
    });
    e.register_fn("answer", || 42i64);
    assert_eq!(
        e.eval_as::<Vec<f64>>("scale([1, 2.5], 2)").unwrap(),
        vec![2.0, 5.0]
    );
    assert_eq!(e.eval_as::<String>("greet('hi', None)").unwrap(), "hi!");
    assert_eq!(e.eval_as::<String>("greet('hi', 3)").unwrap(), "hi!!!");
    assert_eq!(e.eval_as::<i64>("answer()").unwrap(), 42);
    let cases = [
        (
            "scale([1], 'x')",
            "scale() argument 2 must be float, not str",
        ),
        (
            "scale(1, 2)",
            "scale() argument 1 must be list[float], not int",
        ),
        (
            "scale(['a'], 2)",
            "scale() argument 1 must be list[float], not list",
        ),
        ("greet(1, None)", "greet() argument 1 must be str, not int"),
        (
            "greet('a', 1.5)",
            "greet() argument 2 must be int or None, not float",
        ),
        (
            "scale([1])",
            "scale() takes 2 positional arguments but 1 were given",
        ),
        (
            "answer(1)",
            "answer() takes 0 positional arguments but 1 were given",
        ),
        ("scale([1], k=2)", "scale() takes no keyword arguments"),
    ];
    for (src, msg) in cases {
        let err = e.eval(src).unwrap_err();
        assert_eq!(err.kind, ErrorKind::TypeError, "{src}");
        assert_eq!(err.message, msg, "{src}");
    }
    // Scripts can catch them like any TypeError.
    let caught: String = e
        .eval_as("r = ''\ntry:\n    scale(1, 2)\nexcept TypeError as ex:\n    r = str(ex)\nr")
        .unwrap();
    assert_eq!(caught, "scale() argument 1 must be list[float], not int");
}

#[test]
fn host_function_errors_state_and_panics() {
    let mut e = quiet();
    let calls = Rc::new(RefCell::new(Vec::new()));
    let log = calls.clone();
    e.register_fn("record", move |x: i64| log.borrow_mut().push(x));
    e.register_fn("safe_sqrt", |x: f64| -> Result<f64, Error> {
        if x < 0.0 {
            Err(Error::new(ErrorKind::ValueError, "negative input", None))
        } else {
            Ok(x.sqrt())
        }
    });
    e.register_fn("boom", |_x: i64| -> i64 { panic!("host bug") });
    e.eval("for i in range(3):\n    record(i * 10)").unwrap();
    assert_eq!(*calls.borrow(), vec![0, 10, 20]);
    assert_eq!(e.eval_as::<f64>("safe_sqrt(9)").unwrap(), 3.0);
    let err = e.eval("safe_sqrt(-1)").unwrap_err();
    assert_eq!(
        (err.kind, err.message.as_str()),
        (ErrorKind::ValueError, "negative input")
    );
    let r: String = e
        .eval_as("m = ''\ntry:\n    safe_sqrt(-4)\nexcept ValueError as ex:\n    m = str(ex)\nm")
        .unwrap();
    assert_eq!(r, "negative input");
    let err = e.eval("boom(1)").unwrap_err();
    assert_eq!(err.kind, ErrorKind::RuntimeError);
    assert_eq!(err.message, "host function boom() panicked");
    assert_eq!(e.eval_as::<i64>("1 + 1").unwrap(), 2);
    // The error renders with the script's traceback, as the CLI shows it.
    let err = e
        .run_source("def g():\n    return safe_sqrt(-1)\ng()\n", "host.dl")
        .unwrap_err();
    let text = e.render_error(&err);
    assert!(text.contains("host.dl"), "{text}");
    assert!(text.contains("in g"), "{text}");
    // As the CLI prints it: the frames, then the error line, then the underlined source.
    let frame = text.find("in g").unwrap_or(usize::MAX);
    let header = text.find("\nValueError: negative input\n").unwrap_or(0);
    assert!(frame < header, "{text}");
    assert!(text[header..].contains("raised here"), "{text}");
}

#[test]
fn native_modules_import() {
    let mut e = quiet();
    let mut m = NativeModule::new("host");
    m.function("twice", |x: f64| 2.0 * x)
        .constant("version", 3i64)
        .constant("names", vec!["a", "b"]);
    e.register_module(m);
    assert_eq!(
        e.eval_as::<f64>("import host\nhost.twice(host.version)")
            .unwrap(),
        6.0
    );
    assert_eq!(
        e.eval_as::<String>("from host import names\nnames[1]")
            .unwrap(),
        "b"
    );
    let err = e.eval("host.twice('x')").unwrap_err();
    assert_eq!(err.message, "twice() argument 1 must be float, not str");
    assert_eq!(
        e.eval("import hostx").unwrap_err().kind,
        ErrorKind::ImportError
    );
}

#[test]
fn print_goes_to_the_host_callback() {
    let out = Rc::new(RefCell::new(String::new()));
    let sink = out.clone();
    let mut e = Engine::new();
    e.set_output(Box::new(move |s| sink.borrow_mut().push_str(s)));
    e.eval("print('a', 1, 2.0)\nprint([None], end='|')")
        .unwrap();
    assert_eq!(*out.borrow(), "a 1 2.0\n[None]|");
}

#[test]
fn sandbox_blocks_file_access() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret.dl");
    std::fs::write(&secret, "value = 'secret'\n").unwrap();
    let main = dir.path().join("main.dl");
    std::fs::write(&main, "import secret\nleaked = secret.value\n").unwrap();
    // Without the sandbox the import next to the script works.
    let mut open = quiet();
    open.run_file(&main).unwrap();
    assert_eq!(open.get::<String>("leaked").unwrap(), "secret");
    // In the sandbox the same script cannot read the file, nor use `io`.
    let mut e = quiet();
    e.set_sandbox(true);
    assert!(e.is_sandboxed());
    let err = e.run_file(&main).unwrap_err();
    assert_eq!(err.kind, ErrorKind::ImportError);
    assert_eq!(err.message, "No module named 'secret'");
    for src in ["import io", "from io import load_npy"] {
        let err = e.eval(src).unwrap_err();
        assert_eq!(err.kind, ErrorKind::ImportError, "{src}");
        assert_eq!(
            err.message,
            "module 'io' is not available in a sandboxed engine"
        );
    }
    // Host modules are still importable.
    let mut m = NativeModule::new("host");
    m.constant("ok", true);
    e.register_module(m);
    assert!(e.eval_as::<bool>("import host\nhost.ok").unwrap());
}

#[test]
fn tensor_memory_limits_per_engine() {
    let keep: Rc<RefCell<Vec<Tensor>>> = Rc::default();
    let held = keep.clone();
    let mut e = Engine::with_limits(Limits {
        max_tensor_bytes: Some(1 << 20),
        max_total_tensor_bytes: Some(3 << 20),
        ..Limits::default()
    });
    // Allocates `n` f32 zeros and keeps them alive (host-side) until cleared.
    e.register_fn("alloc", move |n: usize| -> Result<usize, Error> {
        let t = creation::zeros(&[n], DType::F32)?;
        held.borrow_mut().push(t);
        Ok(n)
    });
    e.eval("alloc(200000)").unwrap(); // 800 KB
    let err = e.eval("alloc(300000)").unwrap_err(); // 1.2 MB > 1 MiB per tensor
    assert_eq!(err.kind, ErrorKind::MemoryError);
    e.eval("alloc(200000)\nalloc(200000)").unwrap(); // 2.4 MB alive
    let err = e.eval("alloc(200000)").unwrap_err(); // 3.2 MB > 3 MiB alive
    assert_eq!(err.kind, ErrorKind::MemoryError);
    assert!(err.message.contains("alive"), "{}", err.message);
    keep.borrow_mut().clear();
    e.eval("alloc(200000)").unwrap();
    // The caps belong to the engine: outside its runs, and in another engine, the
    // defaults apply.
    assert!(creation::zeros(&[1 << 20], DType::F32).is_ok());
    let mut other = quiet();
    other.register_fn("big", || {
        creation::zeros(&[1 << 20], DType::F32).map(|_| 1i64)
    });
    assert_eq!(other.eval_as::<i64>("big()").unwrap(), 1);
}

#[test]
fn zero_copy_tensor_construction_and_access() {
    let data: Vec<f32> = (0..12).map(|i| i as f32).collect();
    let ptr = data.as_ptr();
    let t = creation::from_f32(data, &[3, 4]).unwrap();
    let same = t.read(|s: &[f32]| (s.as_ptr(), s.len())).unwrap();
    assert_eq!(same, (ptr, 12), "contiguous tensors are read in place");
    assert!(creation::from_f32(vec![1.0; 5], &[2, 3]).is_err());
}

/// Runs a host-provided matmul of `n x n` f32 matrices inside a script and interrupts it
/// from another thread (or by the deadline); returns the error and the time it took.
fn long_matmul(e: &mut Engine, n: usize) -> (Error, Duration) {
    e.register_fn("big_matmul", move || -> Result<i64, Error> {
        let a = creation::ones(&[n, n], DType::F32)?;
        let c = kiln::tensor::linalg::matmul(&a, &a)?;
        Ok(c.numel() as i64)
    });
    let t = Instant::now();
    let err = e.eval("big_matmul()").unwrap_err();
    (err, t.elapsed())
}

#[test]
fn long_native_matmul_is_interruptible() {
    // 4096^3 = 6.9e10 multiply-adds: seconds of work even on many cores.
    let n = 4096;
    let mut e = quiet();
    let flag = e.interrupt_handle();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        flag.store(true, Ordering::Relaxed);
    });
    let (err, took) = long_matmul(&mut e, n);
    t.join().unwrap();
    assert_eq!(err.kind, ErrorKind::KeyboardInterrupt);
    assert!(took < Duration::from_secs(3), "interrupt took {took:?}");
    assert_eq!(e.eval_as::<i64>("2 + 2").unwrap(), 4);

    let mut e = Engine::with_limits(Limits {
        wall_time: Some(Duration::from_millis(100)),
        ..Limits::default()
    });
    let (err, took) = long_matmul(&mut e, n);
    assert_eq!(err.kind, ErrorKind::LimitExceeded);
    assert!(took < Duration::from_secs(3), "deadline took {took:?}");
}

#[test]
fn tensors_are_shared_between_host_and_script() {
    let mut e = quiet();
    let t = creation::from_f32(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    e.set("t", t.clone());
    // An in-place update in the script is visible to the host: same storage.
    e.eval("t += 1").unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![2.0, 3.0, 4.0, 5.0]);
    let back: Tensor = e.get("t").unwrap();
    assert!(back.shares_storage(&t));
    let s: Tensor = e.eval_as("t.sum(0)").unwrap();
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![6.0, 8.0]);
    // A host function taking and returning tensors.
    e.register_fn("double", |x: Tensor| -> Result<Tensor, Error> {
        x.mul_s(2.0)
    });
    let d: Vec<f64> = e.eval_as("double(t).tolist()[0]").unwrap();
    assert_eq!(d, vec![4.0, 6.0]);
    let err = e.eval("double([1.0])").unwrap_err();
    assert_eq!(err.message, "double() argument 1 must be Tensor, not list");
    // Scripts are limited by the engine's tensor caps too.
    e.set_limits(Limits {
        max_tensor_bytes: Some(1 << 16),
        ..Limits::default()
    });
    assert_eq!(
        e.eval("zeros(100000)").unwrap_err().kind,
        ErrorKind::MemoryError
    );
    assert!(e.eval("zeros(1000)").is_ok());
}

#[test]
fn script_matmul_is_interrupted_by_the_deadline() {
    let mut e = Engine::with_limits(Limits {
        wall_time: Some(Duration::from_millis(100)),
        ..Limits::default()
    });
    let t = Instant::now();
    let err = e.eval("a = ones(4096, 4096)\nb = a @ a").unwrap_err();
    assert_eq!(err.kind, ErrorKind::LimitExceeded);
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert!(e.get_global("b").is_none());
}

/// A panic inside a run (always a Kiln bug; planted here in the output callback, as
/// host functions catch their own) does not unwind into the host: every entry returns a
/// RuntimeError naming it as an internal error, and the engine stays usable (globals
/// kept, grad mode restored, new runs and calls work).
#[test]
fn a_panic_inside_a_run_comes_back_as_an_internal_error() {
    let mut e = Engine::new();
    e.set_output(Box::new(|s| {
        if let Some(n) = s.strip_prefix("boom") {
            panic!("planted panic {}", n.trim())
        }
    }));
    e.eval("kept = 41\ndef f(n):\n    print('boom', n)\n    return n + 1")
        .unwrap();
    let err = e
        .eval("with no_grad():\n    [print('boom', 1) for _ in range(3)]")
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::RuntimeError);
    assert!(
        err.message.starts_with("internal error: planted panic 1"),
        "{}",
        err.message
    );
    assert!(
        err.message.ends_with("(this is a bug in Kiln)"),
        "{}",
        err.message
    );
    let err = e.call::<_, i64>("f", (2i64,)).unwrap_err();
    assert!(err.message.contains("planted panic 2"), "{}", err.message);
    let f = e.get_global("f").unwrap();
    assert!(e.call_value::<_, i64>(&f, (3i64,)).is_err());
    assert_eq!(e.eval_as::<i64>("kept + 1").unwrap(), 42);
    assert!(e.eval_as::<bool>("is_grad_enabled()").unwrap());
    let y: f64 = e
        .eval_as("x = ones(3, requires_grad=True)\n(x * 2).sum().backward()\nx.grad.sum().item()")
        .unwrap();
    assert_eq!(y, 6.0);
}
