//! Safety limits of the embedding API: operations, call depth, tensor memory, wall time,
//! interrupts from another thread (interpreter loop and a long native kernel), sandbox
//! mode, and engine reuse after each.

use kiln::{Engine, ErrorKind, Limits};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

fn quiet(limits: Limits) -> Engine {
    let mut e = Engine::with_limits(limits);
    e.set_output(Box::new(|_| {}));
    e
}

/// After any failure the engine must still run scripts and keep its globals.
fn assert_usable(e: &mut Engine) {
    e.eval("__probe = 40").unwrap();
    assert_eq!(e.eval_as::<i64>("__probe + 2").unwrap(), 42);
}

#[test]
fn operation_limit_is_exact_for_loops() {
    // One operation per loop iteration: 100 iterations fit in 100 operations, 101 do not.
    let mut e = quiet(Limits {
        max_operations: Some(100),
        ..Limits::default()
    });
    // `while`: one operation per evaluation of the condition (99 iterations + the final
    // test = 100 operations).
    e.eval("i = 0\nwhile i < 99:\n    i += 1").unwrap();
    // `for`: one operation per item.
    e.eval("n = 0\nfor i in range(100):\n    n += 1").unwrap();
    assert_eq!(e.get::<i64>("n").unwrap(), 100);
    let err = e
        .eval("n = 0\nfor i in range(101):\n    n += 1")
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::LimitExceeded);
    assert_eq!(e.get::<i64>("n").unwrap(), 100);
    let err = e.eval("i = 0\nwhile i < 100:\n    i += 1").unwrap_err();
    assert_eq!(err.kind, ErrorKind::LimitExceeded);
    assert_eq!(err.message, "operation limit exceeded");
    // Each run gets a fresh budget.
    e.eval("i = 0\nwhile i < 99:\n    i += 1").unwrap();
    assert_usable(&mut e);
}

#[test]
fn operation_limit_stops_comprehensions_and_builtins() {
    let mut e = quiet(Limits {
        max_operations: Some(10_000),
        ..Limits::default()
    });
    for src in [
        "sum(range(10**12))",
        "[x for x in range(10**12)]",
        "list(range(10**12))",
        "any([x < 0 for x in range(10**12)])",
        "def f(n):\n    return n\nwhile True:\n    f(1)",
    ] {
        let err = e.eval(src).unwrap_err();
        assert_eq!(err.kind, ErrorKind::LimitExceeded, "{src}");
    }
    assert_usable(&mut e);
}

#[test]
fn scripts_cannot_swallow_limit_errors() {
    let mut e = quiet(Limits {
        max_operations: Some(1000),
        ..Limits::default()
    });
    let src = "caught = 0\nwhile True:\n    try:\n        while True:\n            pass\n    except:\n        caught += 1";
    let err = e.eval(src).unwrap_err();
    assert_eq!(err.kind, ErrorKind::LimitExceeded);
    assert_eq!(e.get::<i64>("caught").unwrap(), 0);
    assert_usable(&mut e);
}

#[test]
fn call_depth_limit() {
    let mut e = quiet(Limits {
        max_call_depth: 30,
        ..Limits::default()
    });
    let src = "def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\n";
    e.eval(src).unwrap();
    assert_eq!(e.eval_as::<i64>("f(25)").unwrap(), 25);
    let err = e.eval("f(40)").unwrap_err();
    assert_eq!(err.kind, ErrorKind::RecursionError);
    assert_eq!(e.call::<_, i64>("f", (20i64,)).unwrap(), 20);
    assert_eq!(
        e.call::<_, i64>("f", (31i64,)).unwrap_err().kind,
        ErrorKind::RecursionError
    );
    assert_usable(&mut e);
}

#[test]
fn wall_time_limit() {
    let mut e = quiet(Limits {
        wall_time: Some(Duration::from_millis(200)),
        ..Limits::default()
    });
    let t = Instant::now();
    let err = e.eval("while True:\n    pass").unwrap_err();
    let took = t.elapsed();
    assert_eq!(err.kind, ErrorKind::LimitExceeded);
    assert_eq!(err.message, "wall-time limit exceeded");
    assert!(took >= Duration::from_millis(200), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    // time.sleep honours the deadline too.
    let t = Instant::now();
    let err = e.eval("import time\ntime.sleep(100)").unwrap_err();
    assert_eq!(err.kind, ErrorKind::LimitExceeded);
    assert!(t.elapsed() < Duration::from_secs(5));
    // The next run gets a fresh deadline.
    e.eval("x = sum(range(1000))").unwrap();
    assert_usable(&mut e);
}

#[test]
fn interrupt_from_another_thread_during_infinite_loop() {
    let mut e = quiet(Limits::default());
    let flag = e.interrupt_handle();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        flag.store(true, Ordering::Relaxed);
    });
    let err = e
        .eval("n = 0\nwhile True:\n    try:\n        n += 1\n    except KeyboardInterrupt:\n        pass")
        .unwrap_err();
    t.join().unwrap();
    assert_eq!(err.kind, ErrorKind::KeyboardInterrupt);
    assert!(e.get::<i64>("n").unwrap() > 0);
    // The flag was spent: the next run is not interrupted.
    assert!(!e.interrupt_handle().load(Ordering::Relaxed));
    assert_usable(&mut e);
}

#[test]
fn host_errors_do_not_leak_between_runs() {
    let mut e = quiet(Limits {
        max_operations: Some(50),
        ..Limits::default()
    });
    for _ in 0..3 {
        assert!(e.eval("while True:\n    pass").is_err());
        e.eval("i = 0\nwhile i < 40:\n    i += 1").unwrap();
    }
}

/// Runs `src` and returns the error kind it raised.
fn kind_of(e: &mut Engine, src: &str) -> ErrorKind {
    e.eval(src)
        .map(|_| panic!("{src:?} should have failed"))
        .unwrap_err()
        .kind
}

#[test]
fn container_limit_stops_every_kind_of_growth() {
    let mut e = quiet(Limits {
        max_container_len: 1000,
        ..Limits::default()
    });
    // exactly at the cap is fine
    assert_eq!(e.eval_as::<i64>("len([0] * 1000)").unwrap(), 1000);
    assert_eq!(e.eval_as::<i64>("len('ab' * 500)").unwrap(), 1000);
    let over = [
        "[0] * 1001",
        "(0,) * 1001",
        "'ab' * 501",
        "[0] * 600 + [1] * 600",
        "'a' * 600 + 'b' * 600",
        "[i for i in range(1001)]",
        "{i: i for i in range(1001)}",
        "list(range(5000))",
        "sorted(range(5000))",
        "','.join(['xy'] * 400)",
        "l = []\nfor i in range(2000):\n    l.append(i)",
        "l = [0] * 900\nl.extend(range(200))",
        "l = [0] * 1000\nl.insert(0, 1)",
        "'a'.ljust(1001)",
        "'7'.zfill(1001)",
        "('a' * 100).replace('a', 'bbbbbbbbbbbb')",
        "('x' * 20).replace('', 'y' * 60)",
    ];
    for src in over {
        assert_eq!(kind_of(&mut e, src), ErrorKind::MemoryError, "{src}");
        assert_usable(&mut e);
    }
    // the script can catch it, and the engine keeps working
    let caught = "try:\n    x = [0] * 5000\nexcept MemoryError:\n    x = 'caught'";
    e.eval(caught).unwrap();
    assert_eq!(e.get::<String>("x").unwrap(), "caught");
}

#[test]
fn huge_repetition_raises_instead_of_aborting() {
    // Default limits: these would ask the allocator for tens of gigabytes.
    let mut e = quiet(Limits::default());
    for src in [
        "[0] * (1 << 31)",
        "[0, 1] * (1 << 40)",
        "'x' * (1 << 34)",
        "(None,) * (1 << 33)",
        "'a'.center(1 << 40)",
    ] {
        assert_eq!(kind_of(&mut e, src), ErrorKind::MemoryError, "{src}");
    }
    assert_usable(&mut e);
}

#[test]
fn sandbox_keeps_clocks_and_progress_but_sleep_obeys_the_interrupt() {
    let mut e = quiet(Limits::default());
    e.set_sandbox(true);
    // progress() yields the items unchanged (it never draws in a sandbox)
    assert_eq!(e.eval_as::<i64>("sum(progress(range(10)))").unwrap(), 45);
    e.eval("import time\nt0 = time.perf_counter()\nt1 = time.time()")
        .unwrap();
    let flag = e.interrupt_handle();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        flag.store(true, Ordering::Relaxed);
    });
    let start = Instant::now();
    let err = e.eval("time.sleep(1000)").unwrap_err();
    t.join().unwrap();
    assert_eq!(err.kind, ErrorKind::KeyboardInterrupt);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert_usable(&mut e);
}

#[test]
fn wall_time_limit_stops_a_compiled_tensor_while_loop() {
    // The first call captures the loop (4 iterations); the second runs the compiled
    // loop on an input that never meets the condition (-1e30 + 1 == -1e30): the
    // wall-time limit must stop it instead of hanging the host.
    let mut e = quiet(Limits {
        wall_time: Some(std::time::Duration::from_millis(300)),
        ..Limits::default()
    });
    e.set_compile(true);
    e.eval(
        "@compile\ndef spin(x):\n    while x.sum() < 10:\n        x = x + 1\n    return x\n\
         a = spin(zeros(3))\nstats = compile_stats(spin)",
    )
    .unwrap();
    assert_eq!(
        e.eval_as::<String>("str(a.tolist())").unwrap(),
        "[4.0, 4.0, 4.0]"
    );
    let err = e.eval("spin(ones(3) * -1e30)").unwrap_err();
    assert_eq!(err.kind, ErrorKind::LimitExceeded);
    assert_usable(&mut e);
}
