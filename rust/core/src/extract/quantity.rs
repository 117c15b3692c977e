//! Compound quantities (docs/verify_semantics.md rule 15): `7 hours 30
//! minutes`, `2 feet 6 inches`, `3 m 20 cm`, `5 lb 3 oz`, `2 years and 3
//! months` are one quantity, never their last (or first) number. The
//! quantity answers in its first (largest) unit or its last (smallest) unit:
//! `7 hours 30 minutes` is 7.5 (hours) or 450 (minutes), and nothing else.
//!
//! One linear scan of a bounded window around the answer: a number, a unit,
//! then more numbers with units of the same kind, each smaller than the one
//! before, joined by spaces, commas or `and`.

/// A compound quantity in its first and its last unit, as fractions
/// (numerator, denominator); `None` when a number is too long to convert
/// (such a quantity answers nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantity {
    pub in_first: Option<(i128, i128)>,
    pub in_last: Option<(i128, i128)>,
}

/// What a unit measures: units of one kind convert into each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Time,
    Calendar,
    ImperialLength,
    ImperialWeight,
    MetricLength,
    MetricMass,
    Money,
    Volume,
    UsVolume,
    Angle,
}

/// Units: spellings (compared without case, except `m`/`M` that are not
/// listed twice), kind, and size in the kind's smallest unit.
const UNITS: &[(&[&str], Kind, i128)] = &[
    (&["s", "sec", "secs", "second", "seconds"], Kind::Time, 1),
    (&["min", "mins", "minute", "minutes", "m"], Kind::Time, 60),
    (&["h", "hr", "hrs", "hour", "hours"], Kind::Time, 3_600),
    (&["d", "day", "days"], Kind::Time, 86_400),
    (&["wk", "wks", "week", "weeks"], Kind::Time, 604_800),
    (&["mo", "mos", "month", "months"], Kind::Calendar, 1),
    (&["yr", "yrs", "year", "years"], Kind::Calendar, 12),
    (
        &["in", "inch", "inches", "\"", "\u{2033}"],
        Kind::ImperialLength,
        1,
    ),
    (
        &["ft", "foot", "feet", "'", "\u{2032}"],
        Kind::ImperialLength,
        12,
    ),
    (&["yd", "yds", "yard", "yards"], Kind::ImperialLength, 36),
    (&["mi", "mile", "miles"], Kind::ImperialLength, 63_360),
    (&["oz", "ounce", "ounces"], Kind::ImperialWeight, 1),
    (&["lb", "lbs", "pound", "pounds"], Kind::ImperialWeight, 16),
    (
        &[
            "mm",
            "millimeter",
            "millimeters",
            "millimetre",
            "millimetres",
        ],
        Kind::MetricLength,
        1,
    ),
    (
        &[
            "cm",
            "centimeter",
            "centimeters",
            "centimetre",
            "centimetres",
        ],
        Kind::MetricLength,
        10,
    ),
    (
        &["m", "meter", "meters", "metre", "metres"],
        Kind::MetricLength,
        1_000,
    ),
    (
        &["km", "kilometer", "kilometers", "kilometre", "kilometres"],
        Kind::MetricLength,
        1_000_000,
    ),
    (&["mg", "milligram", "milligrams"], Kind::MetricMass, 1),
    (&["g", "gram", "grams"], Kind::MetricMass, 1_000),
    (
        &["kg", "kilogram", "kilograms"],
        Kind::MetricMass,
        1_000_000,
    ),
    (&["cent", "cents", "\u{a2}"], Kind::Money, 1),
    (&["dollar", "dollars"], Kind::Money, 100),
    (&["cup", "cups"], Kind::UsVolume, 1),
    (&["pt", "pint", "pints"], Kind::UsVolume, 2),
    (&["qt", "quart", "quarts"], Kind::UsVolume, 4),
    (&["gal", "gallon", "gallons"], Kind::UsVolume, 16),
    (
        &[
            "arcsecond",
            "arcseconds",
            "second",
            "seconds",
            "\"",
            "\u{2033}",
        ],
        Kind::Angle,
        1,
    ),
    (
        &[
            "arcminute",
            "arcminutes",
            "minute",
            "minutes",
            "'",
            "\u{2032}",
        ],
        Kind::Angle,
        60,
    ),
    (&["deg", "degree", "degrees", "\u{b0}"], Kind::Angle, 3_600),
    (
        &[
            "ml",
            "milliliter",
            "milliliters",
            "millilitre",
            "millilitres",
        ],
        Kind::Volume,
        1,
    ),
    (
        &["l", "liter", "liters", "litre", "litres"],
        Kind::Volume,
        1_000,
    ),
];

/// How far around the answer (bytes) a quantity is looked for.
const WINDOW: usize = 300;

/// Numbers longer than this are not converted (the quantity then answers nothing).
const MAX_DIGITS: usize = 18;

/// The compound quantity of at least two parts that overlaps
/// `text[start..end]` (the answer), looked for on its line: its byte range
/// and value.
pub(super) fn compound_around(
    text: &str,
    start: usize,
    end: usize,
) -> Option<(usize, usize, Quantity)> {
    let b = text.as_bytes();
    // The line, looked for within the window only (a long line costs no more).
    let lo = start.saturating_sub(WINDOW);
    let hi = end.saturating_add(WINDOW).min(b.len());
    let line_start = memchr::memrchr(b'\n', &b[lo..start]).map_or(0, |k| lo + k + 1);
    let line_end = memchr::memchr(b'\n', &b[end..hi]).map_or(b.len(), |k| end + k);
    let mut from = line_start.max(lo);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    // A quantity that reaches the answer holds no word but numbers, units,
    // `and` and markup: none starts before the last other word.
    from = from.max(after_last_other_word(b, from, start));
    let mut to = line_end.min(end.saturating_add(WINDOW));
    while !text.is_char_boundary(to) {
        to -= 1;
    }
    let mut i = from;
    // A quantity starting at or after the answer's end does not overlap it.
    while i < to.min(end) {
        // Not inside a number or a name (`x2`, `1.5`, `1,000`).
        let after =
            i == 0 || !(b[i - 1].is_ascii_alphanumeric() || matches!(b[i - 1], b'.' | b','));
        let word = b[i].is_ascii_alphabetic();
        if !after || !(b[i].is_ascii_digit() || word) {
            i += 1;
            continue;
        }
        match compound_at(text, i, to) {
            Some((e, q)) => {
                if i < end && start < e {
                    return Some((i, e, q));
                }
                i = e;
            }
            // Past the number or the word.
            None => {
                let k = i;
                while i < to && (b[i].is_ascii_alphanumeric() || (b[i] == b'.' && !word)) {
                    i += 1;
                }
                i = i.max(k + 1);
            }
        }
    }
    None
}

/// The end of the last word in `b[from..start]` that no quantity can hold
/// (not a unit, a number word, `and` or the markup around a unit), or `from`.
fn after_last_other_word(b: &[u8], from: usize, start: usize) -> usize {
    let mut j = start;
    while j > from {
        if !b[j - 1].is_ascii_alphabetic() {
            j -= 1;
            continue;
        }
        let end = j;
        while j > from && b[j - 1].is_ascii_alphabetic() {
            j -= 1;
        }
        // A word cut by the window may be part of a longer one: keep it.
        if j == from {
            return from;
        }
        let Ok(w) = std::str::from_utf8(&b[j..end]) else {
            return from;
        };
        let held = ["and", "text", "mathrm", "textrm", "mbox", "circ"]
            .iter()
            .any(|m| m.eq_ignore_ascii_case(w))
            || units_named(w).is_some()
            || super::words::number_word(w).is_some();
        if !held {
            return end;
        }
    }
    from
}

/// A part of a quantity: its number (numerator, power of ten of the
/// denominator; `None`: too long) and its unit's end.
struct Part {
    number: Option<(i128, u32)>,
    units: Vec<(Kind, i128)>,
    end: usize,
    /// The unit is a dollar sign before the number (`$5`), which may also
    /// open math: only a part with its own unit may follow it.
    sign: bool,
}

/// The compound quantity starting at the number at `i`, ending before `to`.
fn compound_at(text: &str, i: usize, to: usize) -> Option<(usize, Quantity)> {
    let first = part_at(text, i, to)?;
    let sign = first.sign;
    let mut end = first.end;
    let mut parts = vec![(first.number, first.units)];
    while parts.len() <= 8 {
        let last = &parts[parts.len() - 1].1;
        let Some(k) = joiner_end(text, end, to) else {
            break;
        };
        let next = match part_at(text, k, to) {
            Some(next) => next,
            // `7 hours 30`, `5 feet 6`: the unit below the last is meant.
            None if parts.len() == 1 && !sign && !text[end..k].contains(',') => {
                match implied(text, k, to, last) {
                    Some(next) => next,
                    None => break,
                }
            }
            None => break,
        };
        // The kinds the next unit continues, smaller than before.
        let fits: Vec<(Kind, i128)> = next
            .units
            .iter()
            .copied()
            .filter(|&(k, s)| last.iter().any(|&(lk, ls)| lk == k && s < ls))
            .collect();
        if fits.is_empty() {
            break;
        }
        parts.push((next.number, fits));
        end = next.end;
    }
    if parts.len() < 2 {
        return None;
    }
    // The kind every unit is read in: one the last unit continues (`m`
    // after `h` is minutes).
    let kind = parts[parts.len() - 1].1.first()?.0;
    let mut numbers = Vec::new();
    let mut sizes = Vec::new();
    for (number, units) in &parts {
        numbers.push(*number);
        sizes.push(units.iter().find(|u| u.0 == kind)?.1);
    }
    let numbers: Option<Vec<(i128, u32)>> = numbers.into_iter().collect();
    let value = numbers.and_then(|ns| total(&ns, &sizes));
    let in_unit = |size: i128| value.and_then(|(n, d)| reduce(n, d.checked_mul(size)?));
    let q = Quantity {
        in_first: in_unit(sizes[0]),
        in_last: in_unit(*sizes.last()?),
    };
    Some((end, q))
}

/// A number without a unit after a first part whose unit has a customary
/// one below it, ending the quantity (`7 hours 30.`, `5 feet 6,`): that unit.
fn implied(text: &str, k: usize, to: usize, last: &[(Kind, i128)]) -> Option<Part> {
    let (number, end) = number_at(text, k, to)?;
    let rest = text[end..to].trim_start_matches(' ');
    let ends = rest.is_empty() || rest.starts_with(['.', ',', ';', ')', '$', '}', '!', '?']);
    if !ends {
        return None;
    }
    let units: Vec<(Kind, i128)> = last
        .iter()
        .filter_map(|&(kind, size)| {
            let below = match (kind, size) {
                (Kind::Time | Kind::Angle, 3_600) => 60,
                (Kind::Time | Kind::Angle, 60) => 1,
                (Kind::ImperialLength, 12) | (Kind::ImperialWeight, 16) => 1,
                (Kind::Calendar, 12) | (Kind::Money, 100) => 1,
                _ => return None,
            };
            Some((kind, below))
        })
        .collect();
    (!units.is_empty()).then_some(Part {
        number,
        units,
        end,
        sign: false,
    })
}

/// Σ number × size as a fraction (numerator, denominator).
fn total(numbers: &[(i128, u32)], sizes: &[i128]) -> Option<(i128, i128)> {
    let scale = numbers.iter().map(|n| n.1).max()?;
    let mut sum: i128 = 0;
    for (&(n, p), &s) in numbers.iter().zip(sizes) {
        let term = n
            .checked_mul(10i128.checked_pow(scale - p)?)?
            .checked_mul(s)?;
        sum = sum.checked_add(term)?;
    }
    Some((sum, 10i128.checked_pow(scale)?))
}

fn reduce(n: i128, d: i128) -> Option<(i128, i128)> {
    let (mut a, mut b) = (n.abs(), d.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    (a != 0).then(|| (n / a, d / a))
}

/// A number at `i` (digits, an optional decimal part) and the unit after
/// it (spaces or `\text{` between), if it is a unit.
fn part_at(text: &str, i: usize, to: usize) -> Option<Part> {
    let b = &text.as_bytes()[..to];
    let (number, k) = number_at(text, i, to)?;
    let (u, opens) = skip_markup(text, k, to);
    let Some((units, mut end)) = unit_at(text, u, to) else {
        // `$5 and 25 cents`: a dollar sign before a number with no unit
        // after it is its unit (`$5$` is math).
        let dollar = i > 0 && b[i - 1] == b'$' && !b[k..].starts_with(b"$");
        return dollar.then_some(Part {
            number,
            units: vec![(Kind::Money, 100)],
            end: k,
            sign: true,
        });
    };
    // `2 ft. 6 in.`: an abbreviation's dot.
    if end - u <= 3 && text[end..to].starts_with(". ") {
        end += 1;
    }
    // `\text{ hours }`: the braces opened before the unit close after it.
    for _ in 0..opens {
        let rest = &text[end..to];
        let t = rest.trim_start_matches(' ');
        match t.strip_prefix('}') {
            Some(r) => end = to - r.len(),
            None => return None,
        }
    }
    Some(Part {
        number,
        units,
        end,
        sign: false,
    })
}

/// The number at `i`: digits with an optional decimal part, or a number
/// word (`seven`, `thirty`, `twenty-one`), and its end. The value is `None`
/// when it is too long to convert.
fn number_at(text: &str, i: usize, to: usize) -> Option<(Option<(i128, u32)>, usize)> {
    let b = &text.as_bytes()[..to];
    if b.get(i)?.is_ascii_alphabetic() {
        let run = |from: usize| {
            from + b[from..]
                .iter()
                .take_while(|c| c.is_ascii_alphabetic())
                .count()
        };
        let j = run(i);
        let n = super::words::number_word(&text[i..j])?;
        // `twenty-one`.
        if b.get(j) == Some(&b'-') && b.get(j + 1).is_some_and(u8::is_ascii_alphabetic) {
            let k = run(j + 1);
            if let Some(n) = super::words::hyphenated(&text[i..j], &text[j + 1..k]) {
                return Some((Some((i128::from(n), 0)), k));
            }
        }
        return Some((Some((i128::from(n), 0)), j));
    }
    let mut j = i;
    while j < b.len() && b[j].is_ascii_digit() {
        j += 1;
    }
    if j == i {
        return None;
    }
    let mut k = j;
    if b.get(k) == Some(&b'.') && b.get(k + 1).is_some_and(u8::is_ascii_digit) {
        k += 1;
        while k < b.len() && b[k].is_ascii_digit() {
            k += 1;
        }
    }
    let digits: String = text[i..k].chars().filter(char::is_ascii_digit).collect();
    let decimals = if k > j { (k - j - 1) as u32 } else { 0 };
    let number = (digits.len() <= MAX_DIGITS)
        .then(|| digits.parse::<i128>().ok())
        .flatten()
        .map(|n| (n, decimals));
    Some((number, k))
}

/// Past spaces and the markup that wraps a unit (`\text{`, `\mathrm{`,
/// `\,`, `~`), and how many braces that opened.
fn skip_markup(text: &str, mut k: usize, to: usize) -> (usize, usize) {
    let mut opens = 0;
    while k < to {
        let rest = &text[k..to];
        let skip = [
            "\\text{",
            "\\mathrm{",
            "\\textrm{",
            "\\mbox{",
            "\\,",
            "\\ ",
            "\\;",
            "~",
            " ",
            "{",
            // The math or bold the number closes: `$5$ hours`, `**5** hours`.
            "$",
            "**",
            "\\)",
        ]
        .iter()
        .find(|p| rest.starts_with(**p));
        match skip {
            Some(p) => {
                k += p.len();
                opens += usize::from(p.ends_with('{'));
            }
            None => break,
        }
        if opens > 4 {
            break;
        }
    }
    (k.min(to), opens)
}

/// The units spelled at `k` and the end of the spelling. A word unit ends at
/// a non-letter; `'` and `"` (feet and inches) are one character.
fn unit_at(text: &str, k: usize, to: usize) -> Option<(Vec<(Kind, i128)>, usize)> {
    let rest = &text[k..to];
    let c = rest.chars().next()?;
    if let Some(p) = ["^{\\circ}", "^\\circ"]
        .iter()
        .find(|p| rest.starts_with(**p))
    {
        return Some((vec![(Kind::Angle, 3_600)], k + p.len()));
    }
    let len = if c.is_ascii_alphabetic() {
        rest.bytes().take_while(u8::is_ascii_alphabetic).count()
    } else {
        c.len_utf8()
    };
    let w = &rest[..len];
    // A letter run of more than 12 is no unit (and costs no comparisons).
    if len > 12 {
        return None;
    }
    // `in` before a word is the preposition (`5 feet 3 in total`).
    let before_word = rest[len..]
        .trim_start_matches(' ')
        .starts_with(|c: char| c.is_ascii_alphabetic());
    if w.eq_ignore_ascii_case("in") && before_word {
        return None;
    }
    units_named(w).map(|units| (units.to_vec(), k + len))
}

/// The longest unit name in [`UNITS`] (bytes).
const MAX_UNIT_NAME: usize = 12;

/// The units a word names (compared without ASCII case), in [`UNITS`]'
/// order; `None` when it names none. One table lookup: the word before every
/// number of a long completion's answer line is looked up.
fn units_named(w: &str) -> Option<&'static [(Kind, i128)]> {
    type Table = hashbrown::HashMap<Box<[u8]>, Vec<(Kind, i128)>, foldhash::fast::FixedState>;
    static TABLE: std::sync::OnceLock<Table> = std::sync::OnceLock::new();
    if w.is_empty() || w.len() > MAX_UNIT_NAME {
        return None;
    }
    let table = TABLE.get_or_init(|| {
        let mut t = Table::default();
        for &(names, kind, size) in UNITS {
            for n in names {
                let key = n.as_bytes().to_ascii_lowercase().into_boxed_slice();
                let units = t.entry(key).or_default();
                if !units.contains(&(kind, size)) {
                    units.push((kind, size));
                }
            }
        }
        t
    });
    let mut buf = [0u8; MAX_UNIT_NAME];
    let key = &mut buf[..w.len()];
    key.copy_from_slice(w.as_bytes());
    key.make_ascii_lowercase();
    table.get(&*key).map(Vec::as_slice)
}

/// After a part: spaces, a comma or `and` before the next number; the
/// number's start.
fn joiner_end(text: &str, k: usize, to: usize) -> Option<usize> {
    let rest = &text[k..to];
    let t = rest.trim_start_matches([' ', ',']);
    let t = match t.strip_prefix("and ") {
        Some(r) => r.trim_start(),
        None => t,
    };
    let t = skip_prefix_markup(t);
    let at = to - t.len();
    t.as_bytes()
        .first()
        .is_some_and(u8::is_ascii_alphanumeric)
        .then_some(at)
}

/// `\text{ and } 30`: markup around the joiner.
fn skip_prefix_markup(t: &str) -> &str {
    let mut t = t;
    for _ in 0..4 {
        let before = t.len();
        for p in [
            "\\text{",
            "\\mathrm{",
            "}",
            "\\,",
            "\\ ",
            "~",
            " ",
            "and ",
            "$",
            "**",
            "\\(",
        ] {
            if let Some(r) = t.strip_prefix(p) {
                t = r;
            }
        }
        if t.len() == before {
            break;
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The units a word names by a scan of [`UNITS`] (the table's reference).
    fn scanned(w: &str) -> Vec<(Kind, i128)> {
        UNITS
            .iter()
            .filter(|(names, _, _)| names.iter().any(|n| n.eq_ignore_ascii_case(w)))
            .map(|&(_, kind, size)| (kind, size))
            .collect()
    }

    #[test]
    fn the_unit_table_names_what_a_scan_of_the_units_names() {
        let mut words: Vec<String> = UNITS
            .iter()
            .flat_map(|(names, _, _)| names.iter())
            .flat_map(|n| {
                [
                    n.to_string(),
                    n.to_uppercase(),
                    format!("{n}x"),
                    format!("x{n}"),
                ]
            })
            .collect();
        words.extend(
            [
                "",
                "is",
                "the",
                "and",
                "M",
                "Min",
                "SECONDS",
                "inn",
                "millimetresx",
            ]
            .map(String::from),
        );
        for w in &words {
            let got = units_named(w).map(<[_]>::to_vec).unwrap_or_default();
            assert_eq!(got, scanned(w), "{w:?}");
        }
    }

    fn q(text: &str) -> Option<Quantity> {
        let k = text.find(|c: char| c.is_ascii_digit()).unwrap_or(0);
        compound_around(text, k, k + 1).map(|(_, _, q)| q)
    }

    #[test]
    fn compound_quantities_in_their_first_and_last_unit() {
        let both = |text: &str| q(text).map(|q| (q.in_first, q.in_last));
        assert_eq!(
            both("7 hours 30 minutes"),
            Some((Some((15, 2)), Some((450, 1))))
        );
        assert_eq!(both("2 feet 6 inches"), Some((Some((5, 2)), Some((30, 1)))));
        assert_eq!(both("3 m 20 cm"), Some((Some((16, 5)), Some((320, 1)))));
        assert_eq!(both("1 h 15 min"), Some((Some((5, 4)), Some((75, 1)))));
        assert_eq!(both("1 h 15 m"), Some((Some((5, 4)), Some((75, 1)))));
        assert_eq!(both("5 lb 3 oz"), Some((Some((83, 16)), Some((83, 1)))));
        assert_eq!(
            both("2 years and 3 months"),
            Some((Some((9, 4)), Some((27, 1))))
        );
        assert_eq!(both("5'6\""), Some((Some((11, 2)), Some((66, 1)))));
        assert_eq!(both("5 feet 6."), Some((Some((11, 2)), Some((66, 1)))));
        assert_eq!(
            both("seven hours and thirty minutes"),
            Some((Some((15, 2)), Some((450, 1))))
        );
        assert_eq!(
            both("7 \\text{ hours } 30 \\text{ minutes}"),
            Some((Some((15, 2)), Some((450, 1))))
        );
        assert_eq!(
            both("1 hour, 2 minutes and 30 seconds"),
            Some((Some((25, 24)), Some((3750, 1))))
        );
        // A number too long to convert is a quantity that answers nothing.
        assert_eq!(
            both("1000000000000000000000 hours 30 minutes"),
            Some((None, None))
        );
        // No compound: one unit, units growing, other kinds, a word between.
        for text in [
            "7 hours",
            "30 minutes 7 hours",
            "3 kg 20 cm",
            "2 hours to walk 30 minutes",
            "3 in 4 students",
            "7 hours and the bus 30 minutes",
            "5 feet 3 in total",
            "8 hours, 5",
            "$$6 \\text{ and } 8$$",
            "7 hours 30 people",
        ] {
            assert_eq!(q(text), None, "{text}");
        }
    }

    #[test]
    fn a_long_run_of_units_stays_linear() {
        let text = "1 h ".repeat(50_000) + "30 min";
        let t = std::time::Instant::now();
        let _ = compound_around(&text, text.len() - 6, text.len() - 4);
        assert!(t.elapsed() < std::time::Duration::from_secs(5));
    }
}
