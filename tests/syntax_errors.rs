//! Syntax error tests: the message (CPython's wording where it has one) and the span.

mod syntax_util;
use kiln::syntax::is_incomplete;
use kiln::ErrorKind;
use syntax_util::*;

fn check(src: &str, msg: &str, at: &str) {
    let (m, t) = err1(src);
    assert_eq!((m.as_str(), t.as_str()), (msg, at), "for {src:?}");
}

#[test]
fn lexer_errors() {
    check(
        "x = 99999999999999999999",
        "integer literal too large",
        "99999999999999999999",
    );
    check("x = 'abc\ny = 1", "unterminated string literal", "'abc");
    check(
        "x = '''abc",
        "unterminated triple-quoted string literal",
        "'''abc",
    );
    check("yield x", "'yield' outside function", "yield x");
    check(
        "def f():\n  print((yield 1))",
        "yield inside this expression is not supported",
        "(yield 1)",
    );
    check("async def f(): pass", "'async' is not supported", "async");
    check("await x", "'await' is not supported", "await");
    check("x = $", "invalid character '$'", "$");
    check(
        "x = 1 \\ 2",
        "unexpected character after line continuation character",
        "\\",
    );
    check(
        "x = '\\xZZ'",
        "(unicode error) truncated \\xXX escape",
        "'\\xZZ'",
    );
    check("x = b'ab'", "bytes literals are not supported", "b'ab'");
    assert_eq!(errs("x = b'ab'").len(), 1);
    check("x = 1 + 2j", "complex numbers are not supported", "2j");
    check("x = 1.5e3J", "complex numbers are not supported", "1.5e3J");
    check("x = 012", "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers", "012");
}

#[test]
fn layout_errors() {
    let e = errs("if x:\n\ty = 1\n").remove(0);
    assert_eq!(e.kind, ErrorKind::IndentationError);
    assert_eq!(e.message, "tab in indentation");
    assert_eq!(e.span.map(|s| s.start), Some(6));
    let e = errs("if x:\n    a\n  b\n").remove(0);
    assert_eq!(e.kind, ErrorKind::IndentationError);
    assert_eq!(
        e.message,
        "unindent does not match any outer indentation level"
    );
    check(
        "f(a, [b, c)",
        "closing parenthesis ')' does not match opening parenthesis '['",
        ")",
    );
    check("x = (1,\n 2\n\ny = 3", "'(' was never closed", "(");
    check("x = 1)", "unmatched ')'", ")");
}

#[test]
fn indentation_errors_from_the_parser() {
    let e = errs(" x = 1").remove(0);
    assert_eq!(
        (e.kind, e.message.as_str()),
        (ErrorKind::IndentationError, "unexpected indent")
    );
    let e = errs("x = 1\n\n\nif x:\ny = 2\n").remove(0);
    assert_eq!(e.kind, ErrorKind::IndentationError);
    assert_eq!(
        e.message,
        "expected an indented block after 'if' statement on line 4"
    );
    assert_eq!(err1("if x:\ny = 2").1, "y");
    let e = errs("def f():\nreturn 1").remove(0);
    assert_eq!(
        e.message,
        "expected an indented block after function definition on line 1"
    );
    let e = errs("class A:\n").remove(0);
    assert_eq!(
        e.message,
        "expected an indented block after class definition on line 1"
    );
    let e = errs("if a:\n  pass\nelse:\npass").remove(0);
    assert_eq!(
        e.message,
        "expected an indented block after 'else' statement on line 3"
    );
    check(
        "try:\n  pass\nx = 1",
        "expected 'except' or 'finally' block",
        "x",
    );
    check("if x\n  y", "expected ':'", "\n");
}

#[test]
fn invalid_syntax_points_at_the_token() {
    check("x = = 1", "invalid syntax", "=");
    check("x = 1 +", "invalid syntax", "");
    check("f(a b)", "invalid syntax", "b");
}

#[test]
fn unsupported_forms() {
    check(
        "match x:\n  case 1:\n    pass",
        "'match' statements are not supported",
        "match",
    );
    check(
        "class A(B, metaclass=M):\n  pass",
        "metaclasses are not supported",
        "metaclass=M",
    );
    check(
        "from . import x",
        "relative imports are not supported",
        "from .",
    );
    check("from m import *, x", "invalid syntax", ",");
}

#[test]
fn call_and_parameter_errors() {
    check("f(a=1, a=2)", "keyword argument repeated: a", "a=2");
    check(
        "f(a=1, b)",
        "positional argument follows keyword argument",
        "b",
    );
    check(
        "f(**k, b)",
        "positional argument follows keyword argument unpacking",
        "b",
    );
    check(
        "def f(a=1, b): pass",
        "non-default argument follows default argument",
        "b",
    );
    check(
        "def f(a, a): pass",
        "duplicate argument 'a' in function definition",
        "a",
    );
    check("def f(*): pass", "named arguments must follow bare *", "*");
    check(
        "def f(*a, *b): pass",
        "* argument may appear only once",
        "*",
    );
    check(
        "def f(**k, a): pass",
        "arguments cannot follow var-keyword argument",
        "k",
    );
    check(
        "lambda a=1, b: 0",
        "non-default argument follows default argument",
        "b",
    );
}

#[test]
fn target_errors() {
    check("f() = 1", "cannot assign to function call", "f()");
    check("1 = x", "cannot assign to literal", "1");
    check("a + b = 1", "cannot assign to expression", "a + b");
    check("a, f() = 1, 2", "cannot assign to function call", "f()");
    check("x = f() = 1", "cannot assign to function call", "f()");
    check("None = 1", "cannot assign to None", "None");
    check(
        "for f() in x: pass",
        "cannot assign to function call",
        "f()",
    );
    check(
        "with a as f(): pass",
        "cannot assign to function call",
        "f()",
    );
    check("[x for f() in y]", "cannot assign to function call", "f()");
    check("del f()", "cannot delete function call", "f()");
    check(
        "f() += 1",
        "'function call' is an illegal expression for augmented assignment",
        "f()",
    );
    check(
        "a, b += 1",
        "'tuple' is an illegal expression for augmented assignment",
        "a, b",
    );
    check("*a = b", "can't use starred expression here", "*a");
    check(
        "for *a in b: pass",
        "can't use starred expression here",
        "*a",
    );
    check(
        "*a, *b = c",
        "multiple starred expressions in assignment",
        "*b",
    );
    check("x = *a", "can't use starred expression here", "*a");
    check("print((*a))", "cannot use starred expression here", "*a");
    check("lambda: 1 = x", "cannot assign to lambda", "lambda: 1");
}

#[test]
fn misplaced_statements() {
    check("break", "'break' outside loop", "break");
    check("continue", "'continue' not properly in loop", "continue");
    check("return 1", "'return' outside function", "return 1");
    check(
        "while x:\n  def f():\n    break",
        "'break' outside loop",
        "break",
    );
    check(
        "def f():\n  class A:\n    return 1",
        "'return' outside function",
        "return 1",
    );
    check(
        "nonlocal x",
        "nonlocal declaration not allowed at module level",
        "nonlocal x",
    );
    check(
        "try:\n  pass\nexcept:\n  pass\nexcept E:\n  pass",
        "default 'except:' must be last",
        "except:\n  pass",
    );
    // bare annotations parse (`x: int` sets `__annotations__`); CPython's target errors
    check(
        "(a, b): int",
        "only single target (not tuple) can be annotated",
        "(a, b)",
    );
    check(
        "[a]: int = 1",
        "only single target (not list) can be annotated",
        "[a]",
    );
    check("f(): int", "illegal target for annotation", "f()");
    assert!(module_ok(
        "for x in y:\n  if x:\n    break\n  continue\nelse:\n  pass"
    ));
    assert!(module_ok("global g"));
}

fn module_ok(src: &str) -> bool {
    kiln::syntax::parse_module(src, kiln::source::FileId(0)).is_ok()
}

#[test]
fn fstring_errors() {
    check("f'{}'", "f-string: empty expression not allowed", "{}");
    check("f'a}'", "f-string: single '}' is not allowed", "}");
    check(
        "f'{x!z}'",
        "f-string: invalid conversion character: expected 's', 'r', or 'a'",
        "!",
    );
    check("f'{a b}'", "f-string: invalid syntax", "b");
    check("f'{x'", "f-string: expecting '}'", "{x");
}

#[test]
fn recovery_reports_several_errors() {
    let e = errs("x = = 1\ny = 2\nz = )\n");
    let msgs: Vec<&str> = e.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(
        msgs,
        ["unmatched ')'"],
        "layout errors stop at the first one"
    );
    let e = errs("x = = 1\ny = 2\nz = 1 +\nif x:\n  f(a=1, a=2)\nbreak\n");
    let msgs: Vec<&str> = e.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(
        msgs,
        [
            "invalid syntax",
            "invalid syntax",
            "keyword argument repeated: a",
            "'break' outside loop"
        ]
    );
    let e = errs("break\ncontinue\ndef f():\n  pass\nreturn\n");
    assert_eq!(e.len(), 3);
}

#[test]
fn incomplete_inputs() {
    for src in [
        "if x:",
        "if x:\n",
        "def f():\n  return 1\n",
        "x = (1,\n",
        "s = '''abc\n",
        "x = 1 + \\",
        "x = 1 + \\\n",
        "y = [1,\n  2] + \\\r\n",
        "@dec\n",
        "try:\n  pass\n",
        "for i in x:\n  if i:\n    pass\n",
        "f(a,\n  b",
        "if True:\n    if True:\n",
        "for i in x:\n    if i:\n",
        "def f(x):\n    while x:\n",
        "class A:\n    def f(self):\n",
        "if True:\n    if True:",
        "if a:\n    pass\nelse:\n    for i in x:\n        with y:\n",
    ] {
        assert!(is_incomplete(src), "{src:?} should be incomplete");
    }
    for src in [
        "x = 1",
        "x = 1\n",
        "if x:\n  pass\n\n",
        "x = 1 +",
        "x = )",
        "'abc",
        "",
        "print(1)\n",
        "if x: pass\n\n",
        "x = 1  # comment \\\n",
        "s = 'a\\\\'\n",
        "if True:\n    if True:\n\n",
        "if a:\n    x = 1 +\n",
    ] {
        assert!(!is_incomplete(src), "{src:?} should be complete");
    }
}
