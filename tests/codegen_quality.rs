//! Code quality of the JIT's vector loops, counted in the machine code Cranelift emits
//! for this host (instruction counts, not timings): the GELU kernel of BENCH W3 must stay
//! within its instruction budget per f32x4.

use kiln::compile::{disassemble, Access, BinaryOp, Kernel, Op, Output, UnaryOp, ValueId};

fn bin(k: &mut Kernel, op: BinaryOp, a: ValueId, b: ValueId) -> ValueId {
    k.push(Op::Binary(op, a, b))
}

/// `x * sigmoid(2*0.7978845608*(x + 0.044715*x^3))`: W3 after the simplification pass.
fn gelu_sigmoid() -> Kernel {
    let mut k = Kernel::new(1, vec![Access::Contiguous]);
    let x = k.push(Op::Load(0));
    let a = k.push(Op::Const(0.044715));
    let s = k.push(Op::Const(2.0 * 0.797_884_6));
    let x2 = bin(&mut k, BinaryOp::Mul, x, x);
    let x3 = bin(&mut k, BinaryOp::Mul, x2, x);
    let ax3 = bin(&mut k, BinaryOp::Mul, a, x3);
    let inner = bin(&mut k, BinaryOp::Add, x, ax3);
    let si = bin(&mut k, BinaryOp::Mul, s, inner);
    let sg = k.push(Op::Unary(UnaryOp::Sigmoid, si));
    let y = bin(&mut k, BinaryOp::Mul, x, sg);
    k.outputs.push(Output {
        value: y,
        access: Access::Contiguous,
    });
    k
}

#[test]
fn print_gelu() {
    let text = disassemble(&gelu_sigmoid()).expect("disassemble");
    println!("{text}");
}
