//! Parser tests: the AST shape (as S-expressions) of every construct of SPEC section 1.

mod syntax_util;
use syntax_util::*;

#[test]
fn basic_program() {
    let src = "x = 1\ndef f(a, b=2):\n    if a:\n        return a + b\n    while b:\n        b -= 1\n    for i in range(3):\n        print(i)\n\nclass A(B):\n    pass\n";
    assert_eq!(
        sx(src),
        "(= x 1) (def f (a (= b 2)) () ((if a ((return (+ a b))) ()) (while b ((-= b 1)) ()) (for i (call range 3) ((call print i)) ()))) (class A B () (pass))"
    );
}
