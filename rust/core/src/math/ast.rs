//! The parsed form of an answer: a small expression tree plus the structures
//! answers come in (lists, tuples, sets, intervals, matrices, relations).

use num_rational::BigRational;

pub(crate) use super::lexer::RelOp;

/// The "last digit" of a value computed in floating point: a decimal with no
/// stated precision.
pub(crate) const FLOAT: i32 = i32::MIN;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Func {
    Sin,
    Cos,
    Tan,
    Sec,
    Csc,
    Cot,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Ln,
    Exp,
    Abs,
    Floor,
    Ceil,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    /// A literal; for a decimal (an approximation) the power of ten of its
    /// last written digit ([`FLOAT`] for a value computed in floating point).
    Num(Box<BigRational>, Option<i32>),
    /// A variable (or `e`, `i` when not bound).
    Sym(String),
    /// A subscripted name whose subscript is an expression (`F_{n-k-1}`).
    Indexed(String, Box<Node>),
    Pi,
    Inf,
    Add(Vec<Node>),
    Neg(Box<Node>),
    Mul(Vec<Node>),
    Div(Box<Node>, Box<Node>),
    Pow(Box<Node>, Box<Node>),
    /// `Root(index, radicand)`.
    Root(Box<Node>, Box<Node>),
    Fact(Box<Node>),
    Binom(Box<Node>, Box<Node>),
    Func(Func, Box<Node>),
    /// `log_b(x)`: base, argument.
    Log(Box<Node>, Box<Node>),
    /// An unknown function applied: `f(x)`.
    Apply(String, Vec<Node>),
    /// `\sum` (true) or `\prod` (false) over `var` from `lo` to `hi`.
    BigOp(bool, String, Box<Node>, Box<Node>, Box<Node>),
    /// `a ± b` (a unary `±b` has `a = 0`); `true` for `∓`.
    PlusMinus(Box<Node>, Box<Node>, bool),
    Percent(Box<Node>),
    /// `a \bmod b`.
    Mod(Box<Node>, Box<Node>),
    /// `\lim_{var \to target} body`: a constant whose value is not computed
    /// (an equation `\lim ... = 1` answers with its right side).
    Limit(String, Box<Node>, Box<Node>),
    // Structures.
    List(Vec<Node>),
    Tuple(Vec<Node>),
    Set(Vec<Node>),
    /// Interval: lo, hi, lo closed, hi closed.
    Interval(Box<Node>, Box<Node>, bool, bool),
    Union(Vec<Node>),
    Matrix(Vec<Vec<Node>>),
    /// A chain `a op b op c ...`.
    Rel(Vec<Node>, Vec<RelOp>),
    Text(String),
    Ellipsis,
}

impl Node {
    pub(crate) fn num(v: BigRational, decimal: Option<i32>) -> Node {
        Node::Num(Box::new(v), decimal)
    }

    pub(crate) fn is_structure(&self) -> bool {
        matches!(
            self,
            Node::List(_)
                | Node::Tuple(_)
                | Node::Set(_)
                | Node::Interval(..)
                | Node::Union(_)
                | Node::Matrix(_)
                | Node::Rel(..)
                | Node::Text(_)
        )
    }

    /// Visit every node (pre-order).
    pub(crate) fn walk(&self, f: &mut dyn FnMut(&Node)) {
        f(self);
        match self {
            Node::Indexed(_, a)
            | Node::Neg(a)
            | Node::Fact(a)
            | Node::Func(_, a)
            | Node::Percent(a) => a.walk(f),
            Node::Div(a, b)
            | Node::Pow(a, b)
            | Node::Root(a, b)
            | Node::Binom(a, b)
            | Node::Mod(a, b)
            | Node::Log(a, b)
            | Node::PlusMinus(a, b, _)
            | Node::Interval(a, b, _, _) => {
                a.walk(f);
                b.walk(f);
            }
            Node::BigOp(_, _, a, b, c) => {
                a.walk(f);
                b.walk(f);
                c.walk(f);
            }
            Node::Add(v)
            | Node::Mul(v)
            | Node::Apply(_, v)
            | Node::List(v)
            | Node::Tuple(v)
            | Node::Set(v)
            | Node::Union(v)
            | Node::Rel(v, _) => v.iter().for_each(|n| n.walk(f)),
            Node::Matrix(rows) => rows.iter().flatten().for_each(|n| n.walk(f)),
            _ => {}
        }
    }

    /// Whether any literal was written as a decimal.
    pub(crate) fn has_decimal(&self) -> bool {
        let mut found = false;
        self.walk(&mut |n| {
            if let Node::Num(_, Some(_)) = n {
                found = true;
            }
        });
        found
    }
}
