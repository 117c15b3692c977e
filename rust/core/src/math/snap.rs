//! Decimals inside an expression, to the precision they state.
//!
//! docs/verify_semantics.md: a decimal answers to the precision it states. A
//! lone decimal is checked against the gold's value (`1.732` = `\sqrt3`); a
//! decimal inside an expression or a relation (`x + 1.414i`, `a - b = 1.732`)
//! is checked against the exact constants the gold is built from: where it is
//! one of them rounded or truncated at its own last digit, with at least 4
//! significant digits, it stands for that constant, and the two answers are
//! then compared exactly. No numeric slack is added anywhere else, so a wrong
//! expression does not come closer to the gold by being written in decimals.

use num_rational::BigRational;
use num_traits::Zero;

use super::ast::{Node, FLOAT};
use super::compare::{free_symbols, rounds_to_node, rounds_to_real};
use super::eval::{Evaluator, V};
use super::Limits;

/// How many of the gold's constants are tried: each is evaluated once, all
/// of them within one evaluator's work budget.
const MAX_CONSTANTS: usize = 64;
/// How many decimals of the prediction are looked at (each is checked
/// against every constant, a few comparisons of big rationals).
const MAX_DECIMALS: usize = 64;

/// `pred` with each decimal that stands for a constant of `gold` replaced by
/// that constant; `None` when the rule does not apply (the gold has a
/// decimal of its own, or no decimal of `pred` stands for a constant).
pub(crate) fn decimals_as_constants(gold: &Node, pred: &Node, limits: &Limits) -> Option<Node> {
    let decimals = stated_decimals(pred);
    if gold.has_decimal() || decimals == 0 || decimals > MAX_DECIMALS {
        return None;
    }
    let constants = constants_of(gold, limits);
    if constants.is_empty() {
        return None;
    }
    let mut changed = false;
    let mut sn = Snap {
        constants: &constants,
        limits,
        work: 0,
    };
    let out = replace(pred, &mut sn, &mut changed);
    changed.then_some(out)
}

fn stated_decimals(n: &Node) -> usize {
    let mut count = 0;
    n.walk(&mut |m| {
        if let Node::Num(_, Some(e)) = m {
            count += usize::from(*e != FLOAT);
        }
    });
    count
}

/// A constant of the gold: its exact value when rational, else the
/// expression, enclosed when a decimal is checked against it.
enum Constant {
    Exact(BigRational),
    Real,
}

/// The constant parts of the gold with their values: every constant
/// sub-expression that is not a bare integer, and the constant factors of a
/// product or the constant terms of a sum taken together (`2\pi` in
/// `2\pi r`, `1 + \sqrt2` in `x + 1 + \sqrt2`).
fn constants_of(gold: &Node, limits: &Limits) -> Vec<(Node, Constant)> {
    let mut nodes: Vec<Node> = Vec::new();
    gold.walk(&mut |n| {
        if nodes.len() >= MAX_CONSTANTS {
            return;
        }
        match n {
            Node::Num(v, None) if v.is_integer() => {}
            Node::Add(v) | Node::Mul(v) if !is_constant(n) => {
                let parts: Vec<Node> = v.iter().filter(|x| is_constant(x)).cloned().collect();
                if parts.len() >= 2 {
                    nodes.push(match n {
                        Node::Add(_) => Node::Add(parts),
                        _ => Node::Mul(parts),
                    });
                }
            }
            n if !n.is_structure() && is_constant(n) => nodes.push(n.clone()),
            _ => {}
        }
    });
    let mut out = Vec::new();
    let mut ev = Evaluator::new(limits);
    for n in nodes {
        match ev.eval(&n) {
            Ok(V::Q(c)) if c.im.is_zero() => out.push((n, Constant::Exact(c.re))),
            Ok(V::F(c)) if c.im == 0.0 && c.re.is_finite() => out.push((n, Constant::Real)),
            Ok(_) => {}
            Err(_) => break, // the budget is spent
        }
    }
    out
}

fn is_constant(n: &Node) -> bool {
    free_symbols(n).is_empty()
}

struct Snap<'a> {
    constants: &'a [(Node, Constant)],
    limits: &'a Limits,
    work: u64,
}

fn replace(n: &Node, sn: &mut Snap<'_>, changed: &mut bool) -> Node {
    let rec = |x: &Node, sn: &mut Snap<'_>, changed: &mut bool| Box::new(replace(x, sn, changed));
    let all = |v: &[Node], sn: &mut Snap<'_>, changed: &mut bool| -> Vec<Node> {
        v.iter().map(|x| replace(x, sn, changed)).collect()
    };
    match n {
        Node::Num(d, Some(e)) if *e != FLOAT => {
            for (c, x) in sn.constants {
                let stands = match x {
                    Constant::Exact(x) => rounds_to_real(d, *e, x),
                    Constant::Real => rounds_to_node(d, *e, c, sn.limits, &[], &mut sn.work),
                };
                if stands == Some(true) {
                    *changed = true;
                    return c.clone();
                }
            }
            n.clone()
        }
        Node::Add(v) => Node::Add(all(v, sn, changed)),
        Node::Mul(v) => Node::Mul(all(v, sn, changed)),
        Node::List(v) => Node::List(all(v, sn, changed)),
        Node::Tuple(v) => Node::Tuple(all(v, sn, changed)),
        Node::Set(v) => Node::Set(all(v, sn, changed)),
        Node::Union(v) => Node::Union(all(v, sn, changed)),
        Node::Rel(v, ops) => Node::Rel(all(v, sn, changed), ops.clone()),
        Node::Apply(f, v) => Node::Apply(f.clone(), all(v, sn, changed)),
        Node::Matrix(rows) => Node::Matrix(rows.iter().map(|r| all(r, sn, changed)).collect()),
        Node::Neg(a) => Node::Neg(rec(a, sn, changed)),
        Node::Func(f, a) => Node::Func(*f, rec(a, sn, changed)),
        Node::Div(a, b) => {
            let a = rec(a, sn, changed);
            Node::Div(a, rec(b, sn, changed))
        }
        Node::Pow(a, b) => {
            let a = rec(a, sn, changed);
            Node::Pow(a, rec(b, sn, changed))
        }
        Node::Interval(a, b, l, r) => {
            let a = rec(a, sn, changed);
            Node::Interval(a, rec(b, sn, changed), *l, *r)
        }
        _ => n.clone(),
    }
}
