//! Parser tests: the AST shape (as S-expressions) of every construct of SPEC section 1,
//! and spans. Expected trees follow CPython's `ast` module for the same source.

mod syntax_util;
use kiln::syntax::ast::{ExprKind, StmtKind};
use syntax_util::*;

#[test]
fn basic_program() {
    let src = "x = 1\ndef f(a, b=2):\n    if a:\n        return a + b\n    while b:\n        b -= 1\n    for i in range(3):\n        print(i)\n\nclass A(B):\n    pass\n";
    assert_eq!(
        sx(src),
        "(= x 1) (def f (a (= b 2)) () ((if a ((return (+ a b))) ()) (while b ((-= b 1)) ()) (for i (call range 3) ((call print i)) ()))) (class A B () (pass))"
    );
}

#[test]
fn precedence_like_python() {
    assert_eq!(ex("1 + 2 * 3"), "(+ 1 (* 2 3))");
    assert_eq!(ex("1 - 2 - 3"), "(- (- 1 2) 3)");
    assert_eq!(ex("-2**2"), "(- (** 2 2))");
    assert_eq!(ex("2**-1"), "(** 2 (- 1))");
    assert_eq!(ex("2**3**2"), "(** 2 (** 3 2))");
    assert_eq!(ex("not a == b"), "(not (cmp a == b))");
    assert_eq!(ex("a < b <= c != d"), "(cmp a < b <= c != d)");
    assert_eq!(
        ex("a not in b is not c in d is e"),
        "(cmp a not in b is not c in d is e)"
    );
    assert_eq!(ex("a or b and not c"), "(or a (and b (not c)))");
    assert_eq!(
        ex("a | b ^ c & d << e + f"),
        "(| a (^ b (& c (<< d (+ e f)))))"
    );
    assert_eq!(ex("a @ b // c % d / e"), "(/ (% (// (@ a b) c) d) e)");
    assert_eq!(ex("~-+x"), "(~ (- (+ x)))");
    assert_eq!(ex("x if c else y"), "(ifx c x y)");
    assert_eq!(ex("a if b else c if d else e"), "(ifx b a (ifx d c e))");
    assert_eq!(ex("-x.y ** 2"), "(- (** (. x y) 2))");
    assert_eq!(ex("a >> b >> c"), "(>> (>> a b) c)");
    assert_eq!(ex("(a + b) * c"), "(* (+ a b) c)");
}

#[test]
fn lambdas() {
    assert_eq!(ex("lambda: 0"), "(lambda () 0)");
    assert_eq!(
        ex("lambda x, y=1, *a, k, **kw: x"),
        "(lambda (x (= y 1) *a k **kw) x)"
    );
    assert_eq!(ex("lambda *, k=2: k"), "(lambda (* (= k 2)) k)");
    assert_eq!(
        ex("lambda x: x if x else -x"),
        "(lambda (x) (ifx x x (- x)))"
    );
    assert_eq!(ex("lambda: lambda: 1"), "(lambda () (lambda () 1))");
    assert_eq!(
        ex("f(lambda x: x + 1, key=lambda y: y)"),
        "(call f (lambda (x) (+ x 1)) (kw key (lambda (y) y)))"
    );
}

#[test]
fn calls_attributes_subscripts() {
    assert_eq!(ex("f()"), "(call f)");
    assert_eq!(
        ex("f(a, b, *c, d=1, **e)"),
        "(call f a b (* c) (kw d 1) (** e))"
    );
    assert_eq!(ex("f(a,)"), "(call f a)");
    assert_eq!(ex("a.b.c(1)(2)"), "(call (call (. (. a b) c) 1) 2)");
    assert_eq!(ex("a[1]"), "([] a 1)");
    assert_eq!(ex("a[1:3]"), "([] a (slice 1 3 _))");
    assert_eq!(ex("a[::-1]"), "([] a (slice _ _ (- 1)))");
    assert_eq!(ex("a[:]"), "([] a (slice _ _ _))");
    assert_eq!(ex("a[1:]"), "([] a (slice 1 _ _))");
    assert_eq!(ex("a[:, 0]"), "([] a (tuple (slice _ _ _) 0))");
    assert_eq!(ex("a[..., 1]"), "([] a (tuple ... 1))");
    assert_eq!(ex("a[None]"), "([] a None)");
    assert_eq!(ex("a[1,]"), "([] a (tuple 1))");
    assert_eq!(ex("a[i, j:k:2]"), "([] a (tuple i (slice j k 2)))");
    assert_eq!(ex("x.T[0].shape"), "(. ([] (. x T) 0) shape)");
}

#[test]
fn displays() {
    assert_eq!(ex("[]"), "(list)");
    assert_eq!(ex("[1, 2,]"), "(list 1 2)");
    assert_eq!(ex("()"), "(tuple)");
    assert_eq!(ex("(1,)"), "(tuple 1)");
    assert_eq!(ex("(1)"), "1");
    assert_eq!(ex("(1, 2)"), "(tuple 1 2)");
    assert_eq!(ex("1, 2"), "(tuple 1 2)");
    assert_eq!(ex("{}"), "(dict)");
    assert_eq!(ex("{'a': 1, b: [2],}"), "(dict (\"a\" 1) (b (list 2)))");
    assert_eq!(ex("[*a, *b]"), "(list (* a) (* b))");
    assert_eq!(ex("x = *a, b"), "(= x (tuple (* a) b))");
    assert_eq!(ex("[\n 1,\n 2\n]"), "(list 1 2)");
}

#[test]
fn comprehensions() {
    assert_eq!(ex("[x for x in y]"), "(listcomp x (for x y))");
    assert_eq!(
        ex("[x * y for x in a if x for y in b if y if x < y]"),
        "(listcomp (* x y) (for x a (if x)) (for y b (if y) (if (cmp x < y))))"
    );
    assert_eq!(ex("[a for a, b in p]"), "(listcomp a (for (tuple a b) p))");
    assert_eq!(
        ex("{k: v for k, v in d.items()}"),
        "(dictcomp k v (for (tuple k v) (call (. d items))))"
    );
    assert_eq!(
        ex("[x if c else 0 for x in y]"),
        "(listcomp (ifx c x 0) (for x y))"
    );
}

#[test]
fn literals() {
    assert_eq!(ex("12"), "12");
    assert_eq!(ex("0x1f"), "31");
    assert_eq!(ex("0o17"), "15");
    assert_eq!(ex("0b101"), "5");
    assert_eq!(ex("1_000"), "1000");
    assert_eq!(ex("1.0"), "1.0");
    assert_eq!(ex(".5"), "0.5");
    assert_eq!(ex("1e-3"), "0.001");
    assert_eq!(ex("1_0.5"), "10.5");
    assert_eq!(ex("True, False, None, ..."), "(tuple True False None ...)");
    assert_eq!(ex("'a' \"b\""), "\"ab\"");
    assert_eq!(ex("'\\u00e9\\n'"), "\"é\\n\"");
    assert_eq!(ex("r'\\n'"), "\"\\\\n\"");
    assert_eq!(ex("'''a\nb'''"), "\"a\\nb\"");
    assert_eq!(ex("9223372036854775807"), "9223372036854775807");
}

#[test]
fn fstrings() {
    assert_eq!(ex("f'a{x}b'"), "(f \"a\" {x} \"b\")");
    assert_eq!(ex("f'{x!r}'"), "(f {x !r})");
    assert_eq!(ex("f'{x:.3f}'"), "(f {x (spec \".3f\")})");
    assert_eq!(ex("f'{x:>{width}}'"), "(f {x (spec \">\" {width})})");
    assert_eq!(ex("f'{{a}}'"), "(f \"{a}\")");
    assert_eq!(ex("f'{a + b}'"), "(f {(+ a b)})");
    assert_eq!(ex("f'{d[\"k\"]}'"), "(f {([] d \"k\")})");
    assert_eq!(ex("f'{x=}'"), "(f \"x=\" {x !r})");
    assert_eq!(ex("f'{a != b}'"), "(f {(cmp a != b)})");
    assert_eq!(ex("'s' f'{x}' 't'"), "(f \"s\" {x} \"t\")");
    assert_eq!(ex("rf'\\d{x}'"), "(f \"\\\\d\" {x})");
    assert_eq!(ex("f'''{x}\n'''"), "(f {x} \"\\n\")");
    assert_eq!(ex("f'{f\"{x}\"}'"), "(f {(f {x})})");
    assert_eq!(
        ex("f'\\t{x:{w}.{p}}'"),
        "(f \"\\t\" {x (spec {w} \".\" {p})})"
    );
}

#[test]
fn fstring_spans_point_into_the_file() {
    let src = "s = f'ab{xy + 1}'";
    let m = module(src);
    let StmtKind::Assign { value, .. } = &m.body[0].kind else {
        panic!()
    };
    let ExprKind::FString(parts) = &value.kind else {
        panic!()
    };
    let kiln::syntax::ast::FPart::Expr { expr, .. } = &parts[1] else {
        panic!()
    };
    assert_eq!(text(src, expr.span), "xy + 1");
    let ExprKind::Binary(_, a, _) = &expr.kind else {
        panic!()
    };
    assert_eq!(text(src, a.span), "xy");
}

#[test]
fn assignments() {
    assert_eq!(sx("a = b = 1"), "(= a b 1)");
    assert_eq!(sx("a, b = b, a"), "(= (tuple a b) (tuple b a))");
    assert_eq!(sx("x, (y, z) = p"), "(= (tuple x (tuple y z)) p)");
    assert_eq!(sx("[a, *rest] = xs"), "(= (list a (* rest)) xs)");
    assert_eq!(sx("w[0] = 1"), "(= ([] w 0) 1)");
    assert_eq!(sx("o.a.b = 1"), "(= (. (. o a) b) 1)");
    assert_eq!(sx("x: int = 5"), "(: x int 5)");
    assert_eq!(sx("x: int"), "(: x int _)");
    assert_eq!(sx("self.w: list = []"), "(: (. self w) list (list))");
    for op in [
        "+", "-", "*", "/", "//", "%", "**", "@", "&", "|", "^", "<<", ">>",
    ] {
        assert_eq!(sx(&format!("x {op}= 2")), format!("({op}= x 2)"));
    }
    assert_eq!(sx("a.b[1] += 2"), "(+= ([] (. a b) 1) 2)");
}

#[test]
fn compound_statements() {
    assert_eq!(
        sx("if a:\n  x\nelif b:\n  y\nelif c:\n  z\nelse:\n  w\n"),
        "(if a (x) ((if b (y) ((if c (z) (w))))))"
    );
    assert_eq!(sx("if x: y = 1"), "(if x ((= y 1)) ())");
    assert_eq!(
        sx("while a:\n  break\nelse:\n  pass"),
        "(while a (break) (pass))"
    );
    assert_eq!(
        sx("for a, b in c:\n  continue\nelse:\n  pass"),
        "(for (tuple a b) c (continue) (pass))"
    );
    assert_eq!(sx("for x in 1, 2: pass"), "(for x (tuple 1 2) (pass) ())");
    assert_eq!(
        sx("try:\n  a\nexcept E as e:\n  b\nexcept (A, B):\n  c\nexcept:\n  d\nelse:\n  f\nfinally:\n  g\n"),
        "(try (a) ((except E e (b)) (except (tuple A B) _ (c)) (except _ _ (d))) (f) (g))"
    );
    assert_eq!(sx("try:\n  a\nfinally:\n  g"), "(try (a) () () (g))");
    assert_eq!(
        sx("with a as x, b as (y, z), c:\n  pass"),
        "(with ((a x) (b (tuple y z)) (c _)) (pass))"
    );
    assert_eq!(sx("x = 1; y = 2;"), "(= x 1) (= y 2)");
    assert_eq!(sx("if a:\n\n  # comment\n  x\n\ny"), "(if a (x) ()) y");
}

#[test]
fn definitions() {
    assert_eq!(
        sx("def f(a, b=1, *args, c, d=2, **kw) -> int:\n  '''doc'''\n  return\n"),
        "(def f (a (= b 1) *args c (= d 2) **kw) () (\"doc\" (return _)))"
    );
    assert_eq!(sx("def f(*, k): pass"), "(def f (* k) () (pass))");
    assert_eq!(
        sx("def f(x: int, y: float = 1.0): pass"),
        "(def f (x (= y 1.0)) () (pass))"
    );
    assert_eq!(
        sx("@d\n@a.b\n@c(1)\ndef f(): pass"),
        "(def f () (d (. a b) (call c 1)) (pass))"
    );
    assert_eq!(sx("class A:\n  x = 1"), "(class A _ () ((= x 1)))");
    assert_eq!(sx("class A():\n  pass"), "(class A _ () (pass))");
    assert_eq!(
        sx("@dc\nclass A(nn.Module):\n  pass"),
        "(class A (. nn Module) (dc) (pass))"
    );
    assert_eq!(
        sx("def f():\n  global g\n  def h():\n    nonlocal x\n"),
        "(def f () () ((global g) (def h () () ((nonlocal x)))))"
    );
}

#[test]
fn simple_statements() {
    assert_eq!(sx("import a.b as c, d"), "(import (a.b c) d)");
    assert_eq!(sx("from m.n import a, b as c"), "(from m.n a (b c))");
    assert_eq!(sx("from m import (a,\n  b,\n)"), "(from m a b)");
    assert_eq!(sx("from m.n import *"), "(from m.n *)");
    assert_eq!(sx("assert c, 'msg'"), "(assert c \"msg\")");
    assert_eq!(sx("assert c"), "(assert c _)");
    assert_eq!(sx("raise"), "(raise _ _)");
    assert_eq!(sx("raise E('m')"), "(raise (call E \"m\") _)");
    assert_eq!(sx("raise E from C"), "(raise E C)");
    assert_eq!(sx("del a, b[k], c.attr"), "(del a ([] b k) (. c attr))");
    assert_eq!(sx("del (a, b)"), "(del (tuple a b))");
    assert_eq!(sx("pass"), "pass");
    assert_eq!(sx("global g"), "(global g)");
    assert_eq!(
        sx("match = 1\nmatch(x)\nmatch.a = 2"),
        "(= match 1) (call match x) (= (. match a) 2)"
    );
    assert_eq!(sx("x = 1 + \\\n  2"), "(= x (+ 1 2))");
    assert_eq!(sx(""), "");
    assert_eq!(sx("# only a comment\n\n"), "");
    assert_eq!(
        sx("def f():\n  return *a, b"),
        "(def f () () ((return (tuple (* a) b))))"
    );
}

#[test]
fn spans() {
    let src = "x = foo(1, 2)\nif a:\n    y = b.c\nelse:\n    pass\n";
    let m = module(src);
    assert_eq!(text(src, m.body[0].span), "x = foo(1, 2)");
    let StmtKind::Assign { targets, value } = &m.body[0].kind else {
        panic!()
    };
    assert_eq!(text(src, targets[0].span), "x");
    assert_eq!(text(src, value.span), "foo(1, 2)");
    assert_eq!(
        text(src, m.body[1].span),
        "if a:\n    y = b.c\nelse:\n    pass"
    );
    let StmtKind::If { body, .. } = &m.body[1].kind else {
        panic!()
    };
    let StmtKind::Assign { value, .. } = &body[0].kind else {
        panic!()
    };
    assert_eq!(text(src, value.span), "b.c");
    let src = "@d\ndef f(a, b=1):\n  return a[1:2]\n";
    let m = module(src);
    let StmtKind::FuncDef(f) = &m.body[0].kind else {
        panic!()
    };
    assert_eq!(text(src, f.span), "@d\ndef f(a, b=1):\n  return a[1:2]");
    assert_eq!(text(src, f.params.params[1].span), "b");
    let StmtKind::Return(Some(r)) = &f.body[0].kind else {
        panic!()
    };
    assert_eq!(text(src, r.span), "a[1:2]");
    let ExprKind::Subscript(_, s) = &r.kind else {
        panic!()
    };
    assert_eq!(text(src, s.span), "1:2");
    let src = "z = -a ** (b)";
    let m = module(src);
    let StmtKind::Assign { value, .. } = &m.body[0].kind else {
        panic!()
    };
    assert_eq!(text(src, value.span), "-a ** (b)");
}

#[test]
fn spans_include_parentheses_of_operands() {
    let src = "(a).b(c) + (d)";
    let m = module(src);
    let StmtKind::Expr(e) = &m.body[0].kind else {
        panic!()
    };
    assert_eq!(text(src, e.span), src);
    let ExprKind::Binary(_, call, d) = &e.kind else {
        panic!()
    };
    assert_eq!(text(src, call.span), "(a).b(c)");
    assert_eq!(text(src, d.span), "d");
}

#[test]
fn misc_forms() {
    assert_eq!(ex("lambda *args, **kw: 0"), "(lambda (*args **kw) 0)");
    assert_eq!(
        ex("f(*a, b, k=1, *c, **d)"),
        "(call f (* a) b (kw k 1) (* c) (** d))"
    );
    assert_eq!(sx("x = 1 # trailing comment"), "(= x 1)");
    assert_eq!(sx("if a:\r\n    b\r\nc\r\n"), "(if a (b) ()) c");
    assert_eq!(
        sx("class A(B,):\n  def f(self): return self.x"),
        "(class A B () ((def f (self) () ((return (. self x))))))"
    );
    assert_eq!(sx("données = 1"), "(= données 1)");
    assert_eq!(
        sx("x = [i\n  for i in y\n  if i]"),
        "(= x (listcomp i (for i y (if i))))"
    );
    assert_eq!(
        sx("print(f\"{x:>10}|{y!s:^{w}}\")"),
        "(call print (f {x (spec \">10\")} \"|\" {y !s (spec \"^\" {w})}))"
    );
}
