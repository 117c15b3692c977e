//! Unicode in answers: every character means what it shows, or voids the
//! answer; none vanishes.
//!
//! docs/verify_semantics.md ("When two answers are equal"): a sign, digit or
//! relation written in Unicode is read as its ASCII or LaTeX spelling before
//! lexing (every dash or minus form is a minus, full-width and other decimal
//! digits are digits, `½` is `\frac{1}{2}`, `≦` is `\le`, superscript digits
//! are an exponent). What cannot be read that way voids the answer with a
//! reason: a combining mark (`3̸`, `3⃒`), an invisible format character, a
//! negated relation (`≯`, `∉`), an unknown symbol. Text that is all ASCII is
//! returned as it is, at no cost.

use std::borrow::Cow;

use super::Rejection;

/// `s` with every non-ASCII character that has an ASCII or LaTeX reading
/// replaced by it; characters the lexer reads itself (`π`, `≤`, `∞`, letters,
/// currency signs, `°`) are kept.
pub(crate) fn normalize(s: &str) -> Result<Cow<'_, str>, Rejection> {
    if s.is_ascii() {
        return Ok(Cow::Borrowed(s));
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii() {
            out.push(c);
            continue;
        }
        if let Some(first) = script(c, SUPERSCRIPTS) {
            run(&mut out, '^', first, &mut chars, SUPERSCRIPTS);
            continue;
        }
        if let Some(first) = script(c, SUBSCRIPTS) {
            run(&mut out, '_', first, &mut chars, SUBSCRIPTS);
            continue;
        }
        if let Some(d) = decimal_digit(c) {
            out.push(d);
            continue;
        }
        if let Some(l) = math_letter(c) {
            out.push(l);
            continue;
        }
        if let Some((n, d)) = vulgar_fraction(c) {
            out.push_str(&format!("\\frac{{{n}}}{{{d}}}"));
            continue;
        }
        if let Some(g) = greek(c) {
            out.push_str("{\\");
            out.push_str(g);
            out.push('}');
            continue;
        }
        match reading(c) {
            Reading::Keep => out.push(c),
            Reading::As(t) => out.push_str(t),
            Reading::Void(what) => {
                return Err(Rejection::Unparseable(format!(
                    "{what} (U+{:04X}) in the answer",
                    u32::from(c)
                )))
            }
        }
    }
    Ok(Cow::Owned(out))
}

enum Reading {
    /// The lexer reads it itself.
    Keep,
    As(&'static str),
    /// It cannot be read: the answer is void.
    Void(&'static str),
}

fn reading(c: char) -> Reading {
    use Reading::{As, Keep, Void};
    let cp = u32::from(c);
    match c {
        // Full-width forms of ASCII (`３`, `＋`, `＝`) are that ASCII.
        '\u{FF01}'..='\u{FF5E}' => match char::from_u32(cp - 0xFEE0) {
            Some(a) => As(ascii_str(a)),
            None => Void("an unknown symbol"),
        },
        // Every dash or minus form is a minus.
        '\u{2010}'..='\u{2015}'
        | '\u{2212}'
        | '\u{2796}'
        | '\u{02D7}'
        | '\u{FE58}'
        | '\u{FE63}' => As("-"),
        '\u{2795}' | '\u{FE62}' => As("+"),
        '×' | '·' | '⋅' | '∙' | '∗' | '✕' | '✖' | '⨯' | '\u{2062}' => As("*"),
        '÷' | '∕' | '⁄' => As("/"),
        '∶' => As(":"),
        '\u{2063}' => As(","),
        '\u{2064}' => As("+"),
        '≔' | '⩴' => As("="),
        '≡' => As("\\equiv "),
        '≦' => As("\\le "),
        '≧' => As("\\ge "),
        '≃' => As("\\approx "),
        '∥' => As("\\parallel "),
        '⊥' => As("\\perp "),
        '∼' => As("\\sim "),
        '≅' => As("\\cong "),
        '≮' | '≯' | '≰' | '≱' | '≴' | '≵' | '∉' | '∌' | '≢' | '≉' | '≇' | '≁' | '⊄' | '⊅' | '⊈'
        | '⊉' | '∤' | '∦' | '⋠' | '⋡' | '⪇' | '⪈' => Void("a negated relation"),
        '⟨' | '〈' => As("\\langle "),
        '⟩' | '〉' => As("\\rangle "),
        '∅' => As("\\emptyset "),
        'ℝ' => As("\\mathbb{R}"),
        'ℕ' => As("\\mathbb{N}"),
        'ℤ' => As("\\mathbb{Z}"),
        'ℚ' => As("\\mathbb{Q}"),
        'ℂ' => As("\\mathbb{C}"),
        'ℯ' | 'ⅇ' => As("e"),
        'ⅈ' => As("i"),
        'ⅉ' => As("j"),
        'ℎ' => As("h"),
        '∛' => As("\\sqrt[3]"),
        '∜' => As("\\sqrt[4]"),
        '∑' => As("\\sum "),
        '∏' => As("\\prod "),
        '∠' => As("\\angle "),
        '→' | '⟶' => As("\\to "),
        '℃' => As("°C"),
        '℉' => As("°F"),
        // `45º` is written for `45°` (the masculine ordinal looks the same).
        'º' => As("°"),
        'ª' => As("\\text{th}"),
        '′' | '‘' | '’' | '‛' => As("'"),
        '″' | '“' | '”' | '„' | '‟' => As("\""),
        '\u{2028}' | '\u{2029}' | '\u{0085}' => As("\n"),
        // Spaces, and the invisible separators that stand for one.
        '\u{00A0}'
        | '\u{1680}'
        | '\u{2000}'..='\u{200B}'
        | '\u{202F}'
        | '\u{205F}'
        | '\u{2060}'
        | '\u{2061}'
        | '\u{3000}'
        | '\u{FEFF}' => As(" "),
        // Marks that change the character before them: `3̸` is "not 3".
        '\u{0300}'..='\u{036F}'
        | '\u{1AB0}'..='\u{1AFF}'
        | '\u{1DC0}'..='\u{1DFF}'
        | '\u{20D0}'..='\u{20FF}'
        | '\u{FE20}'..='\u{FE2F}'
        | '\u{FE00}'..='\u{FE0F}'
        | '\u{E0100}'..='\u{E01EF}' => Void("a combining mark"),
        // Invisible characters that are no space: a soft hyphen, joiners,
        // direction marks and overrides, tags.
        '\u{00AD}'
        | '\u{061C}'
        | '\u{180E}'
        | '\u{200C}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2065}'..='\u{206F}'
        | '\u{E0000}'..='\u{E007F}' => Void("an invisible character"),
        '\u{0080}'..='\u{009F}' => Void("a control character"),
        _ if c.is_numeric() => Void("a numeral the verifier does not read"),
        _ => Keep,
    }
}

/// A one-character ASCII string (a `&'static str` for every printable byte).
fn ascii_str(a: char) -> &'static str {
    const PRINTABLE: &str = " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~";
    let i = (a as usize).wrapping_sub(0x20);
    PRINTABLE.get(i..i + 1).unwrap_or("")
}

/// The first code points of the blocks of ten decimal digits (Unicode
/// category Nd) other than ASCII and full-width.
const DIGIT_BLOCKS: &[u32] = &[
    0x0660, 0x06F0, 0x07C0, 0x0966, 0x09E6, 0x0A66, 0x0AE6, 0x0B66, 0x0BE6, 0x0C66, 0x0CE6, 0x0D66,
    0x0DE6, 0x0E50, 0x0ED0, 0x0F20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90,
    0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0,
    0x104A0, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650, 0x116C0,
    0x11730, 0x118E0, 0x16A60, 0x16B50, 0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E950,
    0x1FBF0,
];

/// A decimal digit of any script as its ASCII digit (`٣`, `３`, `𝟑`).
fn decimal_digit(c: char) -> Option<char> {
    let cp = u32::from(c);
    if (0xFF10..=0xFF19).contains(&cp) {
        return char::from_digit(cp - 0xFF10, 10);
    }
    DIGIT_BLOCKS
        .iter()
        .find(|&&b| (b..b + 10).contains(&cp))
        .and_then(|&b| char::from_digit(cp - b, 10))
}

/// A letter of the Mathematical Alphanumeric Symbols block (`𝑥`, `𝐀`) as
/// its ASCII letter.
fn math_letter(c: char) -> Option<char> {
    let cp = u32::from(c);
    if !(0x1D400..=0x1D6A3).contains(&cp) {
        return None;
    }
    let k = (cp - 0x1D400) % 52;
    let base = if k < 26 { b'A' } else { b'a' };
    Some(char::from(base + (k % 26) as u8))
}

fn vulgar_fraction(c: char) -> Option<(u32, u32)> {
    Some(match c {
        '½' => (1, 2),
        '⅓' => (1, 3),
        '⅔' => (2, 3),
        '¼' => (1, 4),
        '¾' => (3, 4),
        '⅕' => (1, 5),
        '⅖' => (2, 5),
        '⅗' => (3, 5),
        '⅘' => (4, 5),
        '⅙' => (1, 6),
        '⅚' => (5, 6),
        '⅐' => (1, 7),
        '⅛' => (1, 8),
        '⅜' => (3, 8),
        '⅝' => (5, 8),
        '⅞' => (7, 8),
        '⅑' => (1, 9),
        '⅒' => (1, 10),
        '↉' => (0, 3),
        _ => return None,
    })
}

/// Greek letters as the names of their LaTeX commands, so that `θ` and
/// `\theta` are one name.
fn greek(c: char) -> Option<&'static str> {
    Some(match c {
        'α' => "alpha",
        'β' => "beta",
        'γ' => "gamma",
        'δ' => "delta",
        'ε' | 'ϵ' => "epsilon",
        'ζ' => "zeta",
        'η' => "eta",
        'θ' | 'ϑ' => "theta",
        'ι' => "iota",
        'κ' => "kappa",
        'λ' => "lambda",
        'μ' | 'µ' => "mu",
        'ν' => "nu",
        'ξ' => "xi",
        'ρ' => "rho",
        'σ' | 'ς' => "sigma",
        'τ' => "tau",
        'υ' => "upsilon",
        'φ' | 'ϕ' => "phi",
        'χ' => "chi",
        'ψ' => "psi",
        'ω' => "omega",
        'Γ' => "Gamma",
        'Δ' => "Delta",
        'Θ' => "Theta",
        'Λ' => "Lambda",
        'Ξ' => "Xi",
        'Π' => "Pi",
        'Σ' => "Sigma",
        'Φ' => "Phi",
        'Ψ' => "Psi",
        'Ω' => "Omega",
        _ => return None,
    })
}

const SUPERSCRIPTS: &[(char, char)] = &[
    ('⁰', '0'),
    ('¹', '1'),
    ('²', '2'),
    ('³', '3'),
    ('⁴', '4'),
    ('⁵', '5'),
    ('⁶', '6'),
    ('⁷', '7'),
    ('⁸', '8'),
    ('⁹', '9'),
    ('⁺', '+'),
    ('⁻', '-'),
    ('⁼', '='),
    ('⁽', '('),
    ('⁾', ')'),
    ('ⁿ', 'n'),
    ('ⁱ', 'i'),
    ('ˣ', 'x'),
];

const SUBSCRIPTS: &[(char, char)] = &[
    ('₀', '0'),
    ('₁', '1'),
    ('₂', '2'),
    ('₃', '3'),
    ('₄', '4'),
    ('₅', '5'),
    ('₆', '6'),
    ('₇', '7'),
    ('₈', '8'),
    ('₉', '9'),
    ('₊', '+'),
    ('₋', '-'),
    ('₌', '='),
    ('₍', '('),
    ('₎', ')'),
    ('ₐ', 'a'),
    ('ₑ', 'e'),
    ('ₒ', 'o'),
    ('ₓ', 'x'),
    ('ₙ', 'n'),
    ('ₖ', 'k'),
    ('ᵢ', 'i'),
    ('ⱼ', 'j'),
];

fn script(c: char, table: &[(char, char)]) -> Option<char> {
    table.iter().find(|(u, _)| *u == c).map(|(_, a)| *a)
}

/// A run of superscript (subscript) characters as one `^{...}` (`_{...}`):
/// `10¹²` is `10^{12}`.
fn run(
    out: &mut String,
    op: char,
    first: char,
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    table: &[(char, char)],
) {
    out.push(op);
    out.push('{');
    out.push(first);
    while let Some(a) = chars.peek().and_then(|&c| script(c, table)) {
        out.push(a);
        chars.next();
    }
    out.push('}');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings() {
        for (s, want) in [
            ("３", "3"),
            ("−3", "-3"),
            ("‒3", "-3"),
            ("—3", "-3"),
            ("﹣3", "-3"),
            ("－3", "-3"),
            ("٣٤", "34"),
            ("𝟑", "3"),
            ("𝑥²", "x^{2}"),
            ("10¹²", "10^{12}"),
            ("x⁻¹", "x^{-1}"),
            ("a₁", "a_{1}"),
            ("3½", "3\\frac{1}{2}"),
            ("θ", "{\\theta}"),
            ("1 000", "1 000"),
            ("≦3", "\\le 3"),
            ("π", "π"),
            ("€5", "€5"),
        ] {
            assert_eq!(normalize(s).expect(s), want, "{s}");
        }
        for s in [
            "3\u{338}",
            "3\u{20D2}",
            "≯3",
            "x∉A",
            "3\u{00AD}",
            "\u{202E}12",
            "Ⅻ",
        ] {
            assert!(normalize(s).is_err(), "{s}");
        }
    }
}
