//! The commonest short answers, parsed without the lexer: a whole number
//! (`380`, `007`), a decimal (`380.0`), a fraction of two whole numbers
//! (`\frac{50}{58}`, `\dfrac{3}{4}`, `\tfrac{1}{2}`) and a square root of
//! one with a whole factor (`\sqrt{128}`, `8\sqrt{2}`), a fraction with a
//! multiple of π (`\frac{3\pi}{7}`, `\frac{3}{7}\pi`), a pair or an interval
//! of two whole numbers (`(3, 7)`, `\left[3, 7\right)`). Each is a gold or an answer of most
//! math rows, and the general path (normalise, prose and quantity checks,
//! lexer, parser, lowering) took about 0.3 µs for `380` and 0.7 µs for a
//! fraction. The value built here is the node the general path builds for
//! the same text (a test checks them equal on generated texts and near
//! misses); any other text, and any text under limits too small for it, is
//! left to the general path.

use num_bigint::BigInt;
use num_rational::BigRational;

use super::ast::Node;
use super::Limits;

/// The longest run of digits read here (it fits in a `u64`).
const MAX_DIGITS: usize = 18;

/// The node of `s` when it is one of the forms above.
pub(super) fn parse(s: &str, limits: &Limits) -> Option<Node> {
    // The general path's limits, for the largest text read here: nine
    // tokens, a depth of four, five nodes, 18 digits of 60 bits.
    if s.len() > limits.max_len
        || limits.max_tokens < 16
        || limits.max_depth < 8
        || limits.max_nodes < 8
        || limits.max_digits < MAX_DIGITS
        || limits.max_bits < 64
    {
        return None;
    }
    if let Some(n) = whole(s).or_else(|| decimal(s)) {
        return Some(n);
    }
    match s.as_bytes().first()? {
        b'(' | b'[' => pair(s),
        b'\\' if s.starts_with("\\left") => pair(s),
        _ => fraction(s).or_else(|| root(s)),
    }
}

/// `\sqrt{128}`, `8\sqrt{2}`.
fn root(s: &str) -> Option<Node> {
    let at = s.find("\\sqrt{")?;
    let radicand = s[at + 6..].strip_suffix('}')?;
    let root = Node::Root(Box::new(int_node(2)), Box::new(whole(radicand)?));
    match &s[..at] {
        "" => Some(root),
        k => Some(Node::Mul(vec![whole(k)?, root])),
    }
}

/// `\frac{50}{58}`, with a multiple of π on top (`\frac{3\pi}{7}`) or
/// after it (`\frac{3}{7}\pi`).
fn fraction(s: &str) -> Option<Node> {
    let rest = s
        .strip_prefix("\\frac{")
        .or_else(|| s.strip_prefix("\\dfrac{"))
        .or_else(|| s.strip_prefix("\\tfrac{"))?;
    let (num, rest) = rest.split_once("}{")?;
    let (den, pi_after) = match rest.strip_suffix("}\\pi") {
        Some(den) => (den, true),
        None => (rest.strip_suffix('}')?, false),
    };
    let num = match num.strip_suffix("\\pi") {
        Some(k) if !pi_after => Node::Mul(vec![whole(k)?, Node::Pi]),
        _ => whole(num)?,
    };
    let div = Node::Div(Box::new(num), Box::new(whole(den)?));
    Some(if pi_after {
        Node::Mul(vec![div, Node::Pi])
    } else {
        div
    })
}

/// `(3, 7)` (a pair), `[3, 7)`, `(3, 7]`, `[3, 7]` (intervals), each with
/// or without `\left` and `\right`.
fn pair(s: &str) -> Option<Node> {
    let t = s.strip_prefix("\\left").unwrap_or(s);
    let square = t.starts_with('[');
    let t = t.strip_prefix(['(', '['])?;
    let close_square = t.ends_with(']');
    let t = t.strip_suffix([')', ']'])?;
    let t = match t.strip_suffix("\\right") {
        Some(t) if s.starts_with("\\left") => t,
        None if !s.starts_with("\\left") => t,
        _ => return None,
    };
    let (a, b) = t.split_once(',')?;
    let (a, b) = (whole(a.trim_matches(' '))?, whole(b.trim_matches(' '))?);
    Some(if square || close_square {
        Node::Interval(Box::new(a), Box::new(b), square, close_square)
    } else {
        Node::Tuple(vec![a, b])
    })
}

/// A decimal `380.0`, `0.25`: 1 to 18 digits on each side of the point,
/// exact, marked with the power of ten of its last digit.
fn decimal(s: &str) -> Option<Node> {
    let (int, frac) = s.split_once('.')?;
    let all_digits =
        |t: &str| (1..=MAX_DIGITS).contains(&t.len()) && t.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(int) || !all_digits(frac) {
        return None;
    }
    let scale = BigInt::from(10u64).pow(frac.len() as u32);
    let n =
        BigInt::from(int.parse::<u64>().ok()?) * &scale + BigInt::from(frac.parse::<u64>().ok()?);
    Some(Node::num(
        super::ratio::new(n, scale),
        Some(-(frac.len() as i32)),
    ))
}

fn int_node(n: u64) -> Node {
    Node::num(BigRational::from_integer(BigInt::from(n)), None)
}

/// A run of 1 to 18 ASCII digits as a number node.
fn whole(s: &str) -> Option<Node> {
    if s.is_empty() || s.len() > MAX_DIGITS || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(int_node(s.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::super::{parse_general, ParseOptions};
    use super::*;
    use proptest::prelude::*;

    /// The fast path's node is the general path's, wherever it answers.
    fn agrees(s: &str) -> Result<(), TestCaseError> {
        let opts = ParseOptions::default();
        if let Some(fast) = parse(s, &opts.limits) {
            let general = parse_general(s, &opts);
            prop_assert!(general.is_ok(), "{s:?}: general path refused: {general:?}");
            let general = general.map(|v| v.node).unwrap_or(Node::Ellipsis);
            prop_assert_eq!(fast, general, "{:?}", s);
        }
        Ok(())
    }

    fn digits() -> impl Strategy<Value = String> {
        prop_oneof!["[0-9]{1,20}", "0{1,3}[0-9]{1,5}", Just(String::new())]
    }

    proptest! {
        #[test]
        fn whole_numbers_and_fractions_as_the_general_path_reads_them(
            a in digits(),
            b in digits(),
            cmd in prop_oneof![Just("frac"), Just("dfrac"), Just("tfrac"), Just("cfrac"), Just("fra")],
        ) {
            agrees(&a)?;
            agrees(&format!("\\{cmd}{{{a}}}{{{b}}}"))?;
            agrees(&format!("{a}.{b}"))?;
            agrees(&format!("\\sqrt{{{a}}}"))?;
            agrees(&format!("{a}\\sqrt{{{b}}}"))?;
            agrees(&format!("\\{cmd}{{{a}\\pi}}{{{b}}}"))?;
            agrees(&format!("\\{cmd}{{{a}}}{{{b}}}\\pi"))?;
            agrees(&format!("\\{cmd}{{{a}\\pi}}{{{b}}}\\pi"))?;
        }

        #[test]
        fn pairs_and_intervals_as_the_general_path_reads_them(
            a in digits(),
            b in digits(),
            open in prop_oneof![Just("("), Just("["), Just("\\left("), Just("\\left["), Just("\\left\\{"), Just("{")],
            close in prop_oneof![Just(")"), Just("]"), Just("\\right)"), Just("\\right]"), Just("\\right\\}"), Just("}")],
            sep in prop_oneof![Just(","), Just(", "), Just(" , "), Just(",  "), Just(";"), Just(",,")],
        ) {
            agrees(&format!("{open}{a}{sep}{b}{close}"))?;
            agrees(&format!("{open} {a}{sep}{b} {close}"))?;
        }

        // Near misses: every answer of these characters either agrees or is
        // left to the general path.
        #[test]
        fn near_misses_agree_or_are_left(s in "[0-9{}\\\\fracdtpi -]{0,16}", t in "[0-9()\\[\\], leftrigh\\\\]{0,16}") {
            agrees(&s)?;
            agrees(&t)?;
        }
    }

    #[test]
    fn what_the_fast_path_reads() {
        let l = Limits::default();
        for s in [
            "0",
            "380",
            "007",
            "999999999999999999",
            "\\frac{50}{58}",
            "\\dfrac{3}{4}",
            "\\tfrac{1}{0}",
        ] {
            assert!(parse(s, &l).is_some(), "{s}");
            agrees(s).unwrap();
        }
        for s in [
            "",
            "-5",
            "+5",
            "1 000",
            "1,000",
            "1e3",
            ".5",
            "5.",
            "1.2.3",
            "\\sqrt2",
            "\\sqrt{2}x",
            "x\\sqrt{2}",
            "\\sqrt[3]{2}",
            "2\\sqrt{\\sqrt{2}}",
            "(3, 7",
            "(3, 7, 8)",
            "\\left(3, 7)",
            "(3, 7\\right)",
            "(-3, 7)",
            "\\frac{\\pi}{2}",
            "\\pi",
            "9999999999999999999",
            "\\frac{1}{2}x",
            "\\frac{1}{-2}",
            "\\frac12",
            "\\frac{1}{2}}",
            "\\frac{1}{{2}}",
        ] {
            assert!(parse(s, &l).is_none(), "{s}");
        }
        let tight = Limits {
            max_digits: 3,
            ..Limits::default()
        };
        assert!(parse("1234", &tight).is_none());
    }
}
