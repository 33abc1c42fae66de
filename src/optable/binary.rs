//! The binary elementwise ops (`BinaryOp`).

/// Binary elementwise ops (`+ - * / // % **`, comparisons, `& | ^`, maximum/minimum).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Rem,
    Pow,
    Maximum,
    Minimum,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    Xor,
}

impl BinaryOp {
    /// The op's name in error messages (PyTorch's function names).
    pub fn name(self) -> &'static str {
        use BinaryOp::*;
        match self {
            Add => "add",
            Sub => "sub",
            Mul => "mul",
            Div => "div",
            FloorDiv => "floor_divide",
            Rem => "remainder",
            Pow => "pow",
            Maximum => "maximum",
            Minimum => "minimum",
            Eq => "eq",
            Ne => "ne",
            Lt => "lt",
            Le => "le",
            Gt => "gt",
            Ge => "ge",
            And => "bitwise_and",
            Or => "bitwise_or",
            Xor => "bitwise_xor",
        }
    }

    pub fn is_comparison(self) -> bool {
        use BinaryOp::*;
        matches!(self, Eq | Ne | Lt | Le | Gt | Ge)
    }

    pub fn is_logical(self) -> bool {
        matches!(self, BinaryOp::And | BinaryOp::Or | BinaryOp::Xor)
    }

    /// Ops with a gradient (floor_divide/remainder get zero / pass-through grads).
    pub fn differentiable(self) -> bool {
        !self.is_comparison() && !self.is_logical()
    }
}
