//! A canonical, human-readable rendering of parsed answers.

use std::fmt::Write;

use num_bigint::BigInt;
use num_integer::Integer;
use num_rational::BigRational;
use num_traits::{Signed, Zero};

use super::ast::{Func, Node, RelOp};

pub(crate) fn render(n: &Node) -> String {
    let mut s = String::new();
    write_node(&mut s, n, 0);
    s
}

/// A rational as a terminating decimal when it has one and was written so.
fn number(v: &BigRational, decimal: bool) -> String {
    if v.is_integer() {
        return v.to_integer().to_string();
    }
    if decimal {
        let mut d = v.denom().clone();
        let mut k = 0usize;
        let two = BigInt::from(2);
        let five = BigInt::from(5);
        let (mut twos, mut fives) = (0usize, 0usize);
        while d.is_even() {
            d /= &two;
            twos += 1;
        }
        while (&d % &five).is_zero() {
            d /= &five;
            fives += 1;
        }
        if d == BigInt::from(1) {
            k = twos.max(fives);
        }
        if k > 0 && k <= 60 {
            let scaled =
                (v * BigRational::from_integer(num_traits::pow(BigInt::from(10), k))).to_integer();
            let neg = scaled.is_negative();
            let digits = scaled.abs().to_string();
            let digits = format!("{digits:0>width$}", width = k + 1);
            let (a, b) = digits.split_at(digits.len() - k);
            return format!("{}{a}.{b}", if neg { "-" } else { "" });
        }
    }
    format!("{}/{}", v.numer(), v.denom())
}

fn rel(op: RelOp) -> &'static str {
    match op {
        RelOp::Eq => "=",
        RelOp::Ne => "!=",
        RelOp::Lt => "<",
        RelOp::Le => "<=",
        RelOp::Gt => ">",
        RelOp::Ge => ">=",
        RelOp::Approx => "~",
        RelOp::In => " in ",
        RelOp::Perp => "⊥",
        RelOp::Parallel => "∥",
        RelOp::Sim => "∼",
        RelOp::Cong => "≅",
    }
}

fn func(f: Func) -> &'static str {
    match f {
        Func::Sin => "sin",
        Func::Cos => "cos",
        Func::Tan => "tan",
        Func::Sec => "sec",
        Func::Csc => "csc",
        Func::Cot => "cot",
        Func::Asin => "asin",
        Func::Acos => "acos",
        Func::Atan => "atan",
        Func::Sinh => "sinh",
        Func::Cosh => "cosh",
        Func::Tanh => "tanh",
        Func::Ln => "log",
        Func::Exp => "exp",
        Func::Abs => "abs",
        Func::Floor => "floor",
        Func::Ceil => "ceiling",
    }
}

fn list(s: &mut String, items: &[Node], sep: &str) {
    for (i, n) in items.iter().enumerate() {
        if i > 0 {
            s.push_str(sep);
        }
        write_node(s, n, 0);
    }
}

/// `prec`: 0 top, 1 sum operand, 2 product operand, 3 power base.
fn write_node(s: &mut String, n: &Node, prec: u8) {
    let wrap = |s: &mut String, need: bool, f: &dyn Fn(&mut String)| {
        if need {
            s.push('(');
        }
        f(s);
        if need {
            s.push(')');
        }
    };
    match n {
        Node::Num(v, d) => {
            let t = number(v, d.is_some());
            let need = prec >= 2 && (t.contains('/') || t.starts_with('-'));
            wrap(s, need, &|s| s.push_str(&t));
        }
        Node::Sym(x) => s.push_str(x),
        Node::Indexed(x, sub) => {
            let _ = write!(s, "{x}_{{{}}}", render(sub));
        }
        Node::Pi => s.push_str("pi"),
        Node::Inf => s.push_str("oo"),
        Node::Add(v) => wrap(s, prec >= 2, &|s| {
            for (i, t) in v.iter().enumerate() {
                if let (true, Node::Neg(x)) = (i > 0, t) {
                    s.push_str(" - ");
                    write_node(s, x, 2);
                } else {
                    if i > 0 {
                        s.push_str(" + ");
                    }
                    write_node(s, t, 1);
                }
            }
        }),
        Node::Neg(x) => wrap(s, prec >= 2, &|s| {
            s.push('-');
            write_node(s, x, 2);
        }),
        Node::Mul(v) => wrap(s, prec >= 3, &|s| {
            for (i, t) in v.iter().enumerate() {
                if i > 0 {
                    s.push('*');
                }
                write_node(s, t, 2);
            }
        }),
        Node::Div(a, b) => wrap(s, prec >= 3, &|s| {
            let plain = |n: &Node| matches!(n, Node::Num(..) | Node::Sym(_));
            let num_prec = match &**a {
                Node::Neg(x) if plain(x) => 1,
                x if plain(x) => 1,
                _ => 2,
            };
            write_node(s, a, num_prec);
            s.push('/');
            write_node(s, b, 3);
        }),
        Node::Pow(a, b) => wrap(s, prec >= 3, &|s| {
            write_node(s, a, 3);
            s.push('^');
            write_node(s, b, 3);
        }),
        Node::Root(k, x) => {
            if matches!(&**k, Node::Num(v, _) if v.is_integer() && v.to_integer() == BigInt::from(2))
            {
                let _ = write!(s, "sqrt({})", render(x));
            } else {
                let _ = write!(s, "root({}, {})", render(x), render(k));
            }
        }
        Node::Fact(x) => {
            write_node(s, x, 3);
            s.push('!');
        }
        Node::Binom(a, b) => {
            let _ = write!(s, "binomial({}, {})", render(a), render(b));
        }
        Node::Func(f, x) => {
            let _ = write!(s, "{}({})", func(*f), render(x));
        }
        Node::Log(b, x) => {
            let _ = write!(s, "log({}, {})", render(x), render(b));
        }
        Node::Apply(f, args) => {
            s.push_str(f);
            s.push('(');
            list(s, args, ", ");
            s.push(')');
        }
        Node::BigOp(sum, var, lo, hi, body) => {
            let _ = write!(
                s,
                "{}({}, ({var}, {}, {}))",
                if *sum { "Sum" } else { "Product" },
                render(body),
                render(lo),
                render(hi)
            );
        }
        Node::PlusMinus(a, b, mp) => wrap(s, prec >= 1, &|s| {
            write_node(s, a, 1);
            s.push_str(if *mp { " -+ " } else { " +- " });
            write_node(s, b, 2);
        }),
        Node::Mod(a, b) => wrap(s, prec >= 2, &|s| {
            write_node(s, a, 2);
            s.push_str(" mod ");
            write_node(s, b, 2);
        }),
        Node::Limit(var, to, body) => {
            let _ = write!(s, "Limit({}, {var}, {})", render(body), render(to));
        }
        Node::Percent(x) => {
            write_node(s, x, 3);
            s.push('%');
        }
        Node::List(v) => list(s, v, ", "),
        Node::Tuple(v) => {
            s.push('(');
            list(s, v, ", ");
            if v.len() == 1 {
                s.push(',');
            }
            s.push(')');
        }
        Node::Set(v) => {
            s.push('{');
            list(s, v, ", ");
            s.push('}');
        }
        Node::Interval(a, b, lc, rc) => {
            s.push(if *lc { '[' } else { '(' });
            write_node(s, a, 0);
            s.push_str(", ");
            write_node(s, b, 0);
            s.push(if *rc { ']' } else { ')' });
        }
        Node::Union(v) => list(s, v, " U "),
        Node::Matrix(rows) => {
            s.push_str("Matrix([");
            for (i, r) in rows.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                s.push('[');
                list(s, r, ", ");
                s.push(']');
            }
            s.push_str("])");
        }
        Node::Rel(items, ops) => {
            for (i, t) in items.iter().enumerate() {
                if i > 0 {
                    let op = rel(ops[i - 1]);
                    if op.starts_with(' ') {
                        s.push_str(op);
                    } else {
                        let _ = write!(s, " {op} ");
                    }
                }
                write_node(s, t, 0);
            }
        }
        Node::Text(t) => s.push_str(t),
        Node::Ellipsis => s.push_str("..."),
    }
}
