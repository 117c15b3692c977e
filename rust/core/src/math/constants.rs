//! Arbitrary constants named differently. A general solution or an
//! antiderivative carries constants that stand for any value (`y = C
//! e^{2x}`, `\frac{x^2}{2} + C`); a completion that names them otherwise
//! (`c`, `K`, `c_1`, `A`) gives the same answer when one consistent renaming
//! of its constants into the gold's makes the two equal. Only constants are
//! renamed, never the variables: `x` stays `x` (docs/verify_semantics.md,
//! "When two answers are equal").

use super::ast::Node;
use super::compare::free_symbols;

/// At most this many constants are renamed (4! orders are tried).
const MAX_CONSTANTS: usize = 4;

/// `base` alone or with a numeric subscript: `C`, `C_1`, `C_12`.
fn named(name: &str, bases: &[u8]) -> bool {
    let b = name.as_bytes();
    match b {
        [c] => bases.contains(c),
        [c, b'_', rest @ ..] => {
            bases.contains(c) && !rest.is_empty() && rest.iter().all(u8::is_ascii_digit)
        }
        _ => false,
    }
}

/// A gold's name for an arbitrary constant: `C`, `C_1`, `K`, `K_2`, `c_1`
/// (a lone `c` may be a side of a triangle; a subscripted one is a constant).
fn gold_constant(name: &str) -> bool {
    named(name, b"CK") || (name.len() > 1 && named(name, b"c"))
}

/// A completion's name for an arbitrary constant: `A`, `B`, `C`, `D`, `K`
/// in either case (but `d`, the differential), with or without a numeric
/// subscript.
fn pred_constant(name: &str) -> bool {
    named(name, b"ABCDKabck")
}

/// Whether a name is a single capital letter (`A` in `\pi - A - C`: the
/// gold's capitals are then names of things, angles or points, not
/// constants).
fn capital(name: &str) -> bool {
    name.len() == 1 && name.as_bytes()[0].is_ascii_uppercase()
}

/// The completion with its constants renamed into the gold's, one node per
/// consistent renaming; empty when the gold has no arbitrary constant or the
/// completion's other names are not the gold's variables.
pub(crate) fn renamings(gold: &Node, pred: &Node) -> Vec<Node> {
    if bound_names(gold) || bound_names(pred) {
        return Vec::new();
    }
    let gold_names = free_symbols(gold);
    let (consts, vars): (Vec<&String>, Vec<&String>) =
        gold_names.iter().partition(|n| gold_constant(n));
    if consts.is_empty()
        || consts.len() > MAX_CONSTANTS
        || vars.is_empty()
        || vars.iter().any(|v| capital(v))
    {
        return Vec::new();
    }
    let pred_names = free_symbols(pred);
    let theirs: Vec<&String> = pred_names.iter().filter(|n| !vars.contains(n)).collect();
    if theirs.len() != consts.len()
        || !theirs.iter().all(|n| pred_constant(n))
        || (theirs.len() == 1 && theirs == consts)
    {
        return Vec::new();
    }
    let mut out = Vec::new();
    permutations(consts.len(), &mut |order| {
        let map: Vec<(&str, &str)> = theirs
            .iter()
            .zip(order)
            .map(|(from, &k)| (from.as_str(), consts[k].as_str()))
            .collect();
        // The names unchanged: the completion itself, compared already.
        if map.iter().any(|(from, to)| from != to) {
            out.push(rename(pred, &map));
        }
    });
    out
}

/// Whether a node binds a name (`\sum_{k=1}^n`, `\lim_{x \to 0}`): renaming
/// is then not tried.
fn bound_names(n: &Node) -> bool {
    let mut found = false;
    n.walk(&mut |m| found |= matches!(m, Node::BigOp(..) | Node::Limit(..)));
    found
}

/// Every order of `0..n`.
fn permutations(n: usize, f: &mut dyn FnMut(&[usize])) {
    fn go(k: usize, order: &mut Vec<usize>, f: &mut dyn FnMut(&[usize])) {
        if k == order.len() {
            f(order);
            return;
        }
        for j in k..order.len() {
            order.swap(k, j);
            go(k + 1, order, f);
            order.swap(k, j);
        }
    }
    go(0, &mut (0..n).collect(), f);
}

/// `n` with every name in `map` replaced at once.
fn rename(n: &Node, map: &[(&str, &str)]) -> Node {
    let mut out = n.clone();
    rename_in(&mut out, map);
    out
}

fn rename_in(n: &mut Node, map: &[(&str, &str)]) {
    let one = |b: &mut Box<Node>| rename_in(b, map);
    match n {
        Node::Sym(s) => {
            if let Some((_, to)) = map.iter().find(|(from, _)| from == s) {
                *s = (*to).to_owned();
            }
        }
        Node::Indexed(_, a)
        | Node::Neg(a)
        | Node::Fact(a)
        | Node::Func(_, a)
        | Node::Percent(a) => one(a),
        Node::Div(a, b)
        | Node::Pow(a, b)
        | Node::Root(a, b)
        | Node::Binom(a, b)
        | Node::Mod(a, b)
        | Node::Log(a, b)
        | Node::PlusMinus(a, b, _)
        | Node::Interval(a, b, _, _) => {
            rename_in(a, map);
            rename_in(b, map);
        }
        Node::BigOp(_, _, a, b, c) => {
            rename_in(a, map);
            rename_in(b, map);
            rename_in(c, map);
        }
        Node::Add(v)
        | Node::Mul(v)
        | Node::Apply(_, v)
        | Node::List(v)
        | Node::Tuple(v)
        | Node::Set(v)
        | Node::Union(v)
        | Node::Rel(v, _) => v.iter_mut().for_each(|m| rename_in(m, map)),
        Node::Matrix(rows) => rows.iter_mut().flatten().for_each(|m| rename_in(m, map)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_constants() {
        for c in ["C", "C_1", "K", "c_2", "C_12"] {
            assert!(gold_constant(c), "{c}");
        }
        for v in ["c", "x", "A", "C_x", "C_", "CC"] {
            assert!(!gold_constant(v), "{v}");
        }
        for c in ["c", "k", "A", "B", "b_1", "D"] {
            assert!(pred_constant(c), "{c}");
        }
        for v in ["d", "x", "t", "y", "e"] {
            assert!(!pred_constant(v), "{v}");
        }
    }

    #[test]
    fn constants_are_renamed_and_variables_are_not() {
        use crate::math::{compare, parse, CompareOptions, ParseOptions};
        let same = |g: &str, p: &str| {
            let o = ParseOptions::default();
            let (g, p) = (parse(g, &o).unwrap(), parse(p, &o).unwrap());
            compare(&g, &p, &CompareOptions::default()) == Ok(true)
        };
        assert!(same("y = C e^{2x}", "y = c e^{2x}"));
        assert!(same("C_1 e^x + C_2 e^{-x}", "B e^x + A e^{-x}"));
        assert!(same("x^2/2 + C", "\\frac{x^2}{2} + K"));
        assert!(!same("x^2/2 + C", "t^2/2 + C"));
        assert!(!same("C_1 e^x + C_2 e^{-x}", "A e^x + A e^{-x}"));
        assert!(!same("\\pi - A - C", "\\pi - A - B"));
    }

    #[test]
    fn every_order_once() {
        let mut seen = Vec::new();
        permutations(3, &mut |o| seen.push(o.to_vec()));
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 6);
    }
}
