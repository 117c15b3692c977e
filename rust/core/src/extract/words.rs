//! The words the hedge reader knows: number words and Roman numerals (values
//! written without ASCII digits), and the word classes that say what a value
//! next to them means (docs/verify_semantics.md, "Which answer counts").

/// What a word says about the values around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Class {
    /// `or`, `nor`: the value after it is an alternative to the one before.
    Or,
    /// `and`, `&`: joins values (several choice letters are a hedge).
    And,
    /// Offers the value after it as `or` does between values (`3, perhaps
    /// 4`); `Doubt` words also void a value they come before (`maybe 3`).
    Hedging,
    Doubt,
    /// `not`, `never`, `cannot`, `…n't`: the value after it is negated.
    Negation,
    /// `wrong`, `incorrect`, ...: after a value (`3 is wrong`), negates it.
    Wrong,
    /// `correct`, `right`, `answer`, ...: after `not` (`3 is not correct`),
    /// negates the value before.
    Right,
    /// Words that keep a value's sentence going (`is`, `the`, `be`).
    Filler,
    /// `than`, `above`, `below`, ...: the value after it is a bound.
    Bound,
    /// `more`, `less`, `fewer`, ...: after `or`/`and` (`3 or more`), the
    /// value before is a bound.
    Comparative,
    /// `at` (`at least`, `at most`), `up` (`up to`).
    At,
    /// `least`, `most`: after `at`.
    Extreme,
    /// `i.e.`, `namely`, `equivalently`: the values after it restate the answer.
    Restate,
    /// `because`, `since`, `where`: the values after it explain the answer.
    Explain,
    /// `other`, `another`, `also`: the value after it is another answer.
    Another,
    /// `respectively`, `resp.`: the values before are several answers.
    Respectively,
    /// `e.g.`: the values after it are examples, not the answer.
    Example,
    /// Any other word: ends a run of alternatives.
    Other,
}

/// The class of a word (compared without case). One `match` on the
/// lower-cased bytes: a word costs a few comparisons, however long the text.
pub(super) fn class(w: &str) -> Class {
    let b = w.as_bytes();
    // 24 bytes: `возможно` (16) and `vielleicht` fit.
    if b.len() > 24 {
        return Class::Other;
    }
    let mut buf = [0u8; 24];
    for (d, s) in buf.iter_mut().zip(b) {
        *d = s.to_ascii_lowercase();
    }
    let lower = &buf[..b.len()];
    if lower.len() >= 3 && lower.ends_with(b"n't") {
        return Class::Negation;
    }
    match lower {
        b"or" | b"nor" | b"either" => Class::Or,
        // Other languages' `or` (docs/verify_semantics.md, "Other languages"):
        // German, French/Portuguese, Italian, Russian (a lone `o` reads as a
        // letter, so Spanish/Italian `o` is not here yet) (ASCII lower-casing
        // leaves Cyrillic as written, so both cases are listed).
        b"oder" | b"ou" | b"oppure" | b"o" | b"\xc3\xb3" => Class::Or,
        _ if lower == "или".as_bytes() || lower == "Или".as_bytes() => Class::Or,
        b"vielleicht" | b"eventuell" | b"quiz\xc3\xa1s" | b"quiz\xc3\xa1" | b"forse"
        | b"talvez" => Class::Doubt,
        _ if lower == "возможно".as_bytes() || lower == "Возможно".as_bytes() => {
            Class::Doubt
        }
        b"nicht" | b"kein" | b"keine" | b"pas" | b"n\xc3\xa3o" => Class::Negation,
        _ if lower == "не".as_bytes() || lower == "Не".as_bytes() => Class::Negation,
        b"and" => Class::And,
        b"maybe" | b"perhaps" | b"possibly" | b"could" | b"might" | b"guess" => Class::Doubt,
        b"probably" | b"likely" | b"alternatively" | b"otherwise" | b"else" | b"even" => {
            Class::Hedging
        }
        b"not" | b"never" | b"cannot" | b"neither" => Class::Negation,
        b"wrong" | b"incorrect" | b"invalid" | b"impossible" | b"false" | b"untrue" | b"fails"
        | b"excluded" | b"eliminated" | b"rejected" | b"extraneous" => Class::Wrong,
        b"correct" | b"right" | b"valid" | b"possible" | b"true" | b"answer" | b"solution"
        | b"work" | b"works" | b"working" | b"allowed" => Class::Right,
        b"is" | b"was" | b"are" | b"be" | b"been" | b"being" | b"would" | b"will" | b"seems"
        | b"appears" | b"definitely" | b"clearly" | b"obviously" | b"certainly" | b"surely"
        | b"indeed" | b"the" | b"a" | b"an" | b"it" | b"it's" | b"its" | b"this" | b"that"
        | b"then" | b"so" | b"thus" | b"hence" | b"therefore" | b"must" | b"still" | b"just"
        | b"value" | b"final" | b"seem" | b"look" | b"looks" | b"sound" | b"sounds" | b"quite"
        | b"really" => Class::Filler,
        b"than" | b"above" | b"below" | b"beyond" | b"exceeding" | b"exceeds" | b"nearly"
        | b"almost" | b"atleast" | b"atmost" => Class::Bound,
        b"more" | b"less" | b"fewer" | b"greater" | b"larger" | b"smaller" | b"higher"
        | b"lower" | b"bigger" | b"over" | b"under" => Class::Comparative,
        b"at" | b"up" => Class::At,
        b"least" | b"most" | b"to" => Class::Extreme,
        b"ie" | b"namely" | b"equivalently" | b"aka" | b"equals" | b"written" | b"words" => {
            Class::Restate
        }
        b"because" | b"since" | b"where" | b"when" | b"given" | b"using" | b"via" | b"if"
        | b"from" | b"for" | b"with" => Class::Explain,
        b"other" | b"another" | b"also" | b"second" | b"additionally" => Class::Another,
        b"respectively" | b"resp" => Class::Respectively,
        b"eg" => Class::Example,
        _ => Class::Other,
    }
}

const UNITS: [&str; 20] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];

const TENS: [&str; 8] = [
    "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
];

/// The value of a number word (`four`, `twenty`, `hundred`), if it is one.
pub(super) fn number_word(w: &str) -> Option<i64> {
    let b = w.as_bytes();
    // Three to nine letters, starting with a letter some number word starts
    // with: most words are turned away before any comparison.
    if !(3..=9).contains(&b.len())
        || !matches!(
            b[0].to_ascii_lowercase(),
            b'b' | b'e' | b'f' | b'h' | b'm' | b'n' | b'o' | b's' | b't' | b'z'
        )
    {
        return None;
    }
    let eq = |s: &&str| w.eq_ignore_ascii_case(s);
    if let Some(k) = UNITS.iter().position(eq) {
        return Some(k as i64);
    }
    if let Some(k) = TENS.iter().position(eq) {
        return Some(20 + 10 * k as i64);
    }
    [
        ("hundred", 100),
        ("thousand", 1000),
        ("million", 1_000_000),
        ("billion", 1_000_000_000),
    ]
    .iter()
    .find(|(s, _)| eq(s))
    .map(|&(_, v)| v)
}

/// The value of `tens-unit` (`twenty-one`).
pub(super) fn hyphenated(tens: &str, unit: &str) -> Option<i64> {
    let t = TENS.iter().position(|s| tens.eq_ignore_ascii_case(s))?;
    let u = UNITS[1..10]
        .iter()
        .position(|s| unit.eq_ignore_ascii_case(s))?;
    Some(20 + 10 * t as i64 + 1 + u as i64)
}

/// The value of an upper-case Roman numeral of two letters or more written
/// the usual way (`IV`, `XII`; not `IIII`); a lone `I` is a pronoun, a
/// lone `C` or `D` a choice letter.
pub(super) fn roman(w: &str) -> Option<i64> {
    if w.len() < 2 || w.len() > 15 {
        return None;
    }
    let digit = |c: u8| match c {
        b'I' => Some(1),
        b'V' => Some(5),
        b'X' => Some(10),
        b'L' => Some(50),
        b'C' => Some(100),
        b'D' => Some(500),
        b'M' => Some(1000),
        _ => None,
    };
    let ds: Vec<i64> = w.bytes().map(digit).collect::<Option<_>>()?;
    let mut total = 0;
    for (k, &d) in ds.iter().enumerate() {
        if ds.get(k + 1).is_some_and(|&n| n > d) {
            total -= d;
        } else {
            total += d;
        }
    }
    // Only the canonical spelling of its value (rejects `IIV`, `VV`, `MIM`).
    (total > 0 && to_roman(total) == w).then_some(total)
}

fn to_roman(mut n: i64) -> String {
    let table = [
        (1000, "M"),
        (900, "CM"),
        (500, "D"),
        (400, "CD"),
        (100, "C"),
        (90, "XC"),
        (50, "L"),
        (40, "XL"),
        (10, "X"),
        (9, "IX"),
        (5, "V"),
        (4, "IV"),
        (1, "I"),
    ];
    let mut out = String::new();
    for (v, s) in table {
        while n >= v {
            out.push_str(s);
            n -= v;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_in_words() {
        assert_eq!(number_word("four"), Some(4));
        assert_eq!(number_word("Twelve"), Some(12));
        assert_eq!(number_word("ninety"), Some(90));
        assert_eq!(number_word("fourth"), None);
        assert_eq!(hyphenated("twenty", "one"), Some(21));
        assert_eq!(hyphenated("twenty", "twenty"), None);
        assert_eq!(roman("IV"), Some(4));
        assert_eq!(roman("XLII"), Some(42));
        assert_eq!(roman("MCMXCIV"), Some(1994));
        for no in ["I", "IIII", "IIV", "VV", "ABC", "iv", "MIM"] {
            assert_eq!(roman(no), None, "{no}");
        }
        assert_eq!(class("OR"), Class::Or);
        assert_eq!(class("Isn't"), Class::Negation);
        assert_eq!(class("respectively"), Class::Respectively);
        assert_eq!(class("equivalently"), Class::Restate);
        assert_eq!(class("é"), Class::Other);
        assert_eq!(class("incomprehensibilities"), Class::Other);
    }
}
