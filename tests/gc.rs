//! The cycle collector: cyclic garbage is freed (live-object counts from the collector's
//! registry, not timings), and nothing reachable from globals, frames or the host is.

use kiln::interp::gc;
use kiln::{Engine, Value};

fn engine() -> Engine {
    let mut e = Engine::new();
    e.set_output(Box::new(|_| {}));
    e
}

fn run(e: &mut Engine, src: &str) {
    if let Err(err) = e.run_source(src, "t.dl") {
        panic!("{}", e.render_error(&err));
    }
}

fn int(e: &mut Engine, expr: &str) -> i64 {
    match e.eval_as::<i64>(expr) {
        Ok(v) => v,
        Err(err) => panic!("{expr}: {}", e.render_error(&err)),
    }
}

const MICROGRAD: &str = "
class V:
    def __init__(self, data, prev=()):
        self.data = data
        self.grad = 0.0
        self._prev = prev
        self._backward = None

    def __add__(self, other):
        out = V(self.data + other.data, (self, other))
        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out

    def __mul__(self, other):
        out = V(self.data * other.data, (self, other))
        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out

def step(w):
    loss = V(0.0)
    for i in range(50):
        loss = loss + w * V(float(i))
    loss.grad = 1.0
    loss._backward()
    return loss.data
";

#[test]
fn micrograd_loop_stays_bounded() {
    let mut e = engine();
    run(&mut e, MICROGRAD);
    run(&mut e, "w = V(2.0)\nfor _ in range(5):\n    step(w)\n");
    gc::collect();
    let after_warmup = gc::live_objects();
    // each step builds ~150 nodes, each in a node -> closure -> cell -> node cycle
    run(&mut e, "for _ in range(400):\n    step(w)\n");
    gc::collect();
    let after = gc::live_objects();
    assert!(
        after <= after_warmup + 10,
        "live objects grew from {after_warmup} to {after}"
    );
    // the automatic collections ran and freed the graphs
    assert!(gc::stats().collections[0] > 0);
    assert_eq!(int(&mut e, "int(step(w))"), 2450);
}

#[test]
fn without_collection_the_cycles_would_stay() {
    gc::set_enabled(false);
    let mut e = engine();
    run(&mut e, MICROGRAD);
    gc::collect();
    let before = gc::live_objects();
    run(&mut e, "w = V(2.0)\nfor _ in range(20):\n    step(w)\n");
    let grown = gc::live_objects();
    gc::set_enabled(true);
    assert!(grown >= before + 20 * 100, "{before} -> {grown}");
    let freed = gc::collect();
    assert!(freed >= 20 * 100, "freed {freed}");
    assert!(gc::live_objects() <= before + 10);
}

#[test]
fn cycles_through_every_container_kind_are_freed() {
    let mut e = engine();
    let cases = [
        "xs = []\nxs.append(xs)",
        "d = {}\nd['me'] = d",
        "class A:\n    pass\na = A()\na.me = a",
        "a = []\nb = {'a': a}\na.append((b, 1))",
        "def g():\n    return g\nh = g",
        "class B:\n    def m(self):\n        return 1\nb = B()\nb.cb = b.m",
        "s = []\nf = lambda: s\ns.append(f)",
    ];
    for (i, body) in cases.iter().enumerate() {
        let indented: String = body.lines().map(|l| format!("    {l}\n")).collect();
        run(&mut e, &format!("def case{i}():\n{indented}\ncase{i}()\n"));
        gc::collect();
        let before = gc::live_objects();
        run(&mut e, &format!("for _ in range(30):\n    case{i}()\n"));
        let freed = gc::collect();
        assert!(freed >= 30, "case {i} ({body:?}) freed only {freed}");
        assert!(gc::live_objects() <= before, "case {i} ({body:?}) leaked");
    }
}

#[test]
fn reachable_cycles_survive_collection() {
    let mut e = engine();
    run(
        &mut e,
        "
class Node:
    def __init__(self, v):
        self.v = v
        self.next = self
keep = Node(7)
ring = [1, 2]
ring.append(ring)
d = {'x': 5}
d['self'] = d
def counter():
    n = [0]
    def inc():
        n[0] += 1
        return n[0]
    return inc
c = counter()
",
    );
    gc::collect();
    gc::collect();
    assert_eq!(int(&mut e, "keep.next.next.v"), 7);
    assert_eq!(int(&mut e, "ring[2][2][1]"), 2);
    assert_eq!(int(&mut e, "d['self']['self']['x']"), 5);
    assert_eq!(int(&mut e, "c() + c()"), 3);
}

#[test]
fn cycles_held_by_a_running_frame_survive() {
    let mut e = engine();
    // the collection runs inside `f` (automatic collections fire while it allocates):
    // the local cycle must still be intact afterwards
    run(
        &mut e,
        "
class N:
    pass
def f():
    a = N()
    a.me = a
    a.items = [a]
    junk = []
    for i in range(20000):
        j = N()
        j.me = j
        junk.append(i)
    return a.me.items[0].me is a
ok = f()
",
    );
    assert!(gc::stats().collections[0] > 0);
    assert_eq!(int(&mut e, "1 if ok else 0"), 1);
}

#[test]
fn host_values_keep_their_cycles() {
    let mut e = engine();
    run(
        &mut e,
        "
def make():
    xs = [41]
    xs.append(xs)
    return xs
",
    );
    let held: Value = match e.eval("make()") {
        Ok(v) => v,
        Err(err) => panic!("{}", e.render_error(&err)),
    };
    run(&mut e, "make()\nmake()");
    gc::collect();
    // the host's list is the only reference left outside the cycle
    e.set_global("back", held.clone());
    assert_eq!(int(&mut e, "back[1][1][0] + 1"), 42);
    e.set_global("back", Value::None);
    gc::collect();
    let Value::List(l) = &held else {
        panic!("not a list: {held:?}")
    };
    assert_eq!(l.borrow().len(), 2);
}

#[test]
fn dropping_the_engine_then_collecting_frees_script_cycles() {
    gc::collect();
    let before = gc::live_objects();
    {
        let mut e = engine();
        run(
            &mut e,
            "def f():\n    xs = []\n    xs.append(xs)\nfor _ in range(10):\n    f()\n",
        );
    }
    // the main module and `f` (which holds the module as its globals) form a cycle too
    gc::collect();
    assert!(
        gc::live_objects() <= before,
        "{before} -> {}",
        gc::live_objects()
    );
}

#[test]
fn host_values_outlive_their_engine() {
    let held = {
        let mut e = engine();
        run(
            &mut e,
            "class P:\n    def __init__(self):\n        self.me = self\n        self.n = 5\np = P()\n",
        );
        match e.get_global("p") {
            Some(v) => v,
            None => panic!("no p"),
        }
    };
    gc::collect();
    let Value::Instance(inst) = &held else {
        panic!("not an instance: {held:?}")
    };
    let n = inst.attr("n");
    assert!(matches!(n, Some(Value::Int(5))), "{n:?}");
    let me = inst.attr("me").map(|v| v.ptr_id());
    assert_eq!(me, Some(held.ptr_id()));
}

#[test]
fn deep_immutable_nests_are_freed_without_recursion() {
    // tuples and functions are found while collecting, never registered: a registry
    // handle would make their drop recursive (a stack overflow at this depth)
    let mut e = engine();
    run(
        &mut e,
        "
t = ()
for i in range(200000):
    t = (t, i)
t = None
f = None
for i in range(100000):
    def g(x=f):
        return x
    f = g
f = None
",
    );
    assert_eq!(int(&mut e, "7"), 7);
}

#[test]
fn old_cells_captured_by_young_closures_keep_their_contents() {
    // a collection finds instances, cells, functions, classes and modules among its
    // candidates through an index stamped in the object with the collection's number:
    // an older object (here the cell `data`, promoted by full collections) still carries
    // the index of an earlier collection, and young collections must not take it for
    // one of their own candidates
    let mut e = engine();
    run(
        &mut e,
        "
class Box:
    pass
def outer():
    data = None
    # (bound twice: `data` stays a cell, not a value captured as is)
    data = [1]
    data.append(data)
    def make():
        return lambda: data
    return make
make = outer()
",
    );
    gc::collect();
    gc::collect();
    let young = gc::stats().collections[0];
    run(
        &mut e,
        "
keep = []
for i in range(30000):
    b = Box()
    b.me = b
    b.f = make()
    if i % 1000 == 0:
        keep.append(b.f)
ok = all([f()[1][0] == 1 and f() is f()[1] for f in keep])
",
    );
    assert!(
        gc::stats().collections[0] > young,
        "no young collection ran"
    );
    assert_eq!(int(&mut e, "1 if ok else 0"), 1);
    assert_eq!(int(&mut e, "len(keep)"), 30);
    assert_eq!(int(&mut e, "make()()[1][1][0]"), 1);
}

#[test]
fn shared_functions_and_tuples_are_counted_once() {
    // functions and tuples are not registered but found while collecting; one reached
    // from many young cycles and from an old object must keep what it holds
    let mut e = engine();
    run(
        &mut e,
        "
class N:
    pass
def closure():
    state = {'n': 41}
    def get():
        return state['n']
    return get
holder = N()
holder.pair = (closure(), [7])
",
    );
    gc::collect();
    gc::collect();
    let freed_before = gc::stats().freed;
    run(
        &mut e,
        "
for i in range(20000):
    a = N()
    a.me = a
    a.pair = holder.pair
    a.get = holder.pair[0]
a = None
",
    );
    gc::collect();
    // every `a` was garbage (an instance in a cycle with itself)
    let freed = gc::stats().freed - freed_before;
    assert!(freed >= 20000, "freed {freed}");
    assert_eq!(int(&mut e, "holder.pair[0]() + 1"), 42);
    assert_eq!(int(&mut e, "holder.pair[1][0]"), 7);
}

#[test]
fn the_registry_stays_near_the_young_threshold() {
    // a collection's own frees must not postpone the next one: when they were subtracted
    // from the allocation balance, each collection freed more containers (tuples,
    // functions, cells, instances) than it had tracked, the next one came later and
    // later, and the registry grew to 128k entries on this loop (20 steps per round: a
    // node registers one object since closures capture never-rebound names without
    // cells, where it registered four)
    let mut e = engine();
    run(&mut e, MICROGRAD);
    run(&mut e, "w = V(2.0)\n");
    let young = gc::stats().collections[0];
    let mut most = 0;
    for _ in 0..80 {
        run(&mut e, "for _ in range(20):\n    step(w)\n");
        most = most.max(gc::registered());
    }
    assert!(
        gc::stats().collections[0] >= young + 20,
        "{:?}",
        gc::stats()
    );
    assert!(most <= 24_000, "the registry grew to {most} entries");
}

#[test]
fn dead_entries_are_pruned_without_collections() {
    // acyclic containers freed by reference counting leave a dead registry entry (whose
    // `Weak` keeps the allocation); allocations and frees balance here, so no young
    // collection is due, and the registry is pruned once as many containers were freed
    // as it holds (before, it grew to 128k entries until a pruning collection)
    let mut e = engine();
    run(&mut e, "keep = []\n");
    let mut most = 0;
    for _ in 0..40 {
        run(
            &mut e,
            "for r in range(10):\n    keep = [[i] for i in range(500)]\n",
        );
        most = most.max(gc::registered());
    }
    assert_eq!(int(&mut e, "len(keep) + keep[499][0]"), 999);
    assert!(most <= 40_000, "the registry grew to {most} entries");
}

#[test]
fn never_rebound_captures_allocate_no_cells() {
    // `self`, `other` (parameters never rebound) and `out` (bound once before the def)
    // are captured by value: a micrograd node tracks one object (the instance), where
    // it tracked four with a cell per captured name
    gc::set_enabled(false);
    let mut e = engine();
    run(&mut e, MICROGRAD);
    run(&mut e, "w = V(2.0)\nstep(w)\n");
    gc::collect();
    let before = gc::live_objects();
    // 150 nodes per step
    run(&mut e, "for _ in range(10):\n    step(w)\n");
    let grown = gc::live_objects() - before;
    gc::set_enabled(true);
    assert!(
        (1500..2000).contains(&grown),
        "{grown} objects for 1500 nodes"
    );
    // the cycles node -> closure -> node (no cell between) are still garbage
    let freed = gc::collect();
    assert!(freed >= 1500 * 2, "freed {freed}");
    assert!(gc::live_objects() <= before + 10);
}

#[test]
fn cycles_through_values_captured_as_is_are_freed() {
    // a closure holds `me` itself (never rebound): instance -> function -> instance,
    // and a list that holds the closure that holds it
    let mut e = engine();
    run(
        &mut e,
        "
class A:
    pass
def node():
    me = A()
    def f():
        return me
    me.f = f
    return 1
def listed(xs):
    g = lambda: xs
    xs.append(g)
    return len(xs)
",
    );
    gc::collect();
    let before = gc::live_objects();
    run(&mut e, "for _ in range(50):\n    node()\n    listed([])\n");
    let freed = gc::collect();
    assert!(freed >= 100, "freed only {freed}");
    assert!(gc::live_objects() <= before, "leaked");
    assert_eq!(int(&mut e, "node() + listed([5])"), 3);
}

#[test]
fn classes_with_remembered_methods_are_freed() {
    // a class made in a function, used with `+` and constructed (its `__add__` and
    // `__init__` lookups are remembered in the class): class -> memo -> methods ->
    // module -> ... must still be seen as the class's own references, or every such
    // class would look held from outside and never be freed
    let mut e = engine();
    run(
        &mut e,
        "
def make():
    class K:
        def __init__(self, v):
            self.v = v
        def __add__(self, other):
            return K(self.v + other.v)
    return (K(1) + K(2)).v
",
    );
    assert_eq!(int(&mut e, "make()"), 3);
    gc::collect();
    let before = gc::live_objects();
    run(&mut e, "for _ in range(40):\n    make()\n");
    let freed = gc::collect();
    assert!(freed >= 40, "freed only {freed}");
    assert!(gc::live_objects() <= before, "classes leaked");
}

/// A generator whose frame references the generator itself is cyclic garbage once the
/// script drops it: the collector frees it and, as CPython's finalizer does, runs its
/// pending `finally` exactly once (counted by the script; the truth is the number made).
#[test]
fn self_referencing_generators_are_collected_and_closed_once() {
    let mut e = engine();
    run(
        &mut e,
        "
closed = 0
def gen():
    global closed
    me = yield 1
    try:
        yield me
    finally:
        closed += 1

def make(n):
    for i in range(n):
        g = gen()
        next(g)
        assert g.send(g) is g
",
    );
    gc::collect();
    let before = gc::live_objects();
    run(&mut e, "make(300)");
    gc::collect();
    // the collected generators are closed at the next statement boundary
    run(&mut e, "pass");
    assert_eq!(int(&mut e, "closed"), 300);
    gc::collect();
    run(&mut e, "pass");
    assert_eq!(int(&mut e, "closed"), 300, "a finally ran twice");
    assert!(gc::live_objects() <= before + 10, "generators leaked");
}
