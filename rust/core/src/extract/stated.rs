//! Whether a value found without a marker is a stated result or the question
//! restated (docs/verify_semantics.md "Which answer counts", rule 2): an
//! unevaluated arithmetic expression (`79 + 85`, `12*13`, `7 \times 8`) is
//! an answer only where a result stands, at the end of the text or after a
//! word that states one (`=`, `is`, `gives`, `:`); mid-sentence with prose
//! after it, it is an operand of the question (`To add 79 + 85, you add
//! them.`, `Compute 12*13 please`).

/// Words after which a value is stated as a result.
const RESULT_WORDS: [&str; 37] = [
    "is",
    "are",
    "was",
    "were",
    "be",
    "equals",
    "equal",
    "equaling",
    "get",
    "gets",
    "got",
    "gives",
    "give",
    "gave",
    "makes",
    "make",
    "made",
    "yields",
    "yield",
    "result",
    "results",
    "obtain",
    "obtains",
    "obtained",
    "becomes",
    "become",
    "answer",
    "to",
    "so",
    "thus",
    "therefore",
    "hence",
    "total",
    "sum",
    "product",
    "value",
    "find",
];

/// Words before a result word that make it a question (`what is 79 + 85`).
const QUESTION_WORDS: [&str; 6] = ["what", "whether", "asks", "ask", "much", "many"];

/// Commands that wrap what they hold and add nothing to its arithmetic
/// (`\text{79 + 85}`, `\left(`, `\displaystyle`).
const TRANSPARENT: [&str; 10] = [
    "left",
    "right",
    "text",
    "textrm",
    "mathrm",
    "textbf",
    "mathbf",
    "boldsymbol",
    "displaystyle",
    "mbox",
];

/// Whether `part` is an unevaluated arithmetic expression: numbers joined by
/// at least one operator (`+`, `-`, `*`, `^`, `×`, `·`, `÷`, `\times`,
/// `\cdot`, `\div`), with brackets, and nothing else (no variable, no
/// function, no relation). A fraction `a/b` is a value, not an operation.
pub(crate) fn is_arithmetic(part: &str) -> bool {
    let t = part
        .trim()
        .trim_matches(|c: char| c == '$' || c == '*' || c.is_whitespace());
    let t = t
        .strip_prefix("\\(")
        .or_else(|| t.strip_prefix("\\["))
        .unwrap_or(t);
    let t = t
        .strip_suffix("\\)")
        .or_else(|| t.strip_suffix("\\]"))
        .unwrap_or(t);
    let b = t.as_bytes();
    let (mut operands, mut operators) = (0, 0);
    // Whether the last token was an operand (a binary operator needs one).
    let mut after_operand = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'0'..=b'9' => {
                while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.' || b[i] == b',') {
                    i += 1;
                }
                if !after_operand {
                    operands += 1;
                }
                after_operand = true;
                continue;
            }
            b'+' | b'-' | b'*' | b'^' => {
                if after_operand {
                    operators += 1;
                }
                after_operand = false;
            }
            b'/' => after_operand = false,
            b'(' | b'{' | b'[' => after_operand = false,
            b')' | b'}' | b']' => after_operand = true,
            b' ' | b'\t' => {}
            b'\\' => {
                let mut j = i + 1;
                while j < b.len() && b[j].is_ascii_alphabetic() {
                    j += 1;
                }
                match &t[i + 1..j] {
                    "times" | "cdot" | "div" => {
                        if after_operand {
                            operators += 1;
                        }
                        after_operand = false;
                    }
                    cmd if cmd.is_empty() || TRANSPARENT.contains(&cmd) => {}
                    _ => return false,
                }
                // `\,`, `\!`: the escaped character goes with the backslash,
                // whole (`\é` is two bytes after it, not one).
                let escaped = t[i + 1..].chars().next().map_or(0, char::len_utf8);
                i = j.max(i + 1 + escaped);
                continue;
            }
            _ if c >= 0x80 => {
                let ch = t[i..].chars().next().unwrap_or(' ');
                match ch {
                    '×' | '·' | '÷' | '−' | '⋅' => {
                        if after_operand {
                            operators += 1;
                        }
                        after_operand = false;
                    }
                    _ => return false,
                }
                i += ch.len_utf8();
                continue;
            }
            _ => return false,
        }
        i += 1;
    }
    operators >= 1 && operands >= 2
}

/// Words of the task that touch an expression at the end of a text: it is
/// what is to be done, not what came out (`Let's compute 79 + 85.`, `We
/// need 12 \times 13.`).
const TASK_WORDS: [&str; 20] = [
    "compute",
    "calculate",
    "evaluate",
    "find",
    "determine",
    "need",
    "needs",
    "want",
    "wants",
    "solve",
    "simplify",
    "add",
    "multiply",
    "subtract",
    "divide",
    "computing",
    "calculating",
    "evaluating",
    "finding",
    "consider",
];

/// Whether the value at `text[start..end]` stands where a result is stated:
/// nothing but closing decoration and punctuation after it (unless a word of
/// the task touches it: `Let's compute 79 + 85.`), or a word that states a
/// result right before it (not in a question: `what is 79 + 85`).
pub(crate) fn is_stated(text: &str, start: usize, end: usize) -> bool {
    let after = text[end..].trim_start_matches(|c: char| {
        c.is_whitespace() || matches!(c, '$' | '*' | '.' | '!' | ')' | ']' | '\\')
    });
    let before = text[..start]
        .trim_end_matches(|c: char| c.is_whitespace() || matches!(c, '$' | '*' | '(' | '[' | '\\'));
    if after.is_empty() {
        let task = before
            .rsplit(|c: char| !c.is_alphabetic())
            .next()
            .is_some_and(|w| TASK_WORDS.iter().any(|t| w.eq_ignore_ascii_case(t)));
        return !task;
    }
    if before.ends_with(['=', ':']) || before.ends_with('≈') {
        return true;
    }
    let mut words = before
        .rsplit(|c: char| !c.is_alphabetic() && c != '\'')
        .filter(|w| !w.is_empty());
    let Some(last) = words.next() else {
        // The text opens with the value: a result only if it is all there is.
        return false;
    };
    // The word must touch the value (`is 79 + 85`), not end an earlier clause.
    // (The letters ending `before`: sliced where they start, a character
    // boundary; found by `make fuzz`, which sliced at their length instead.)
    let gap = &before[before.trim_end_matches(char::is_alphabetic).len()..];
    let touching = !gap.is_empty() || before.ends_with(last);
    let last = last.to_lowercase();
    if !touching || !RESULT_WORDS.contains(&last.as_str()) {
        return false;
    }
    let prev = words.next().map(str::to_lowercase);
    !prev.is_some_and(|p| QUESTION_WORDS.contains(&p.as_str()))
}

/// The arithmetic of a text in one spelling: numbers, operators (`*` for
/// `×`, `·`, `\times`, `\cdot`, `times`, `multiplied by`; `/` for `÷`,
/// `\div`, `divided by`; `+` for `plus`; `-` for `−`, `minus`), round
/// brackets for any; spaces, `$`, braces, `\left`/`\right` and thousands
/// commas dropped; anything else a `|` (a break no expression spans).
fn arithmetic_spelling(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let mut step = 1;
        match c {
            b'0'..=b'9' | b'+' | b'-' | b'*' | b'/' | b'^' => out.push(c as char),
            b'.' | b','
                if i > 0
                    && b[i - 1].is_ascii_digit()
                    && b.get(i + 1).is_some_and(u8::is_ascii_digit) =>
            {
                if c == b'.' {
                    out.push('.');
                }
            }
            b'(' | b'[' => out.push('('),
            b')' | b']' => out.push(')'),
            b' ' | b'\t' | b'$' | b'{' | b'}' => {}
            b'\\' => {
                let mut j = i + 1;
                while j < b.len() && b[j].is_ascii_alphabetic() {
                    j += 1;
                }
                match &text[i + 1..j] {
                    "times" | "cdot" => out.push('*'),
                    "div" => out.push('/'),
                    // `\,`, `\;`, `\!`, `\ `: spacing, skipped with its character.
                    "" if matches!(b.get(i + 1), Some(b',' | b';' | b'!' | b':' | b' ')) => {
                        j = i + 2;
                    }
                    cmd if cmd.is_empty() || TRANSPARENT.contains(&cmd) => {}
                    _ => out.push('|'),
                }
                step = (j - i).max(1);
            }
            _ if c.is_ascii_alphabetic() => {
                let mut j = i;
                while j < b.len() && b[j].is_ascii_alphabetic() {
                    j += 1;
                }
                let word = text[i..j].to_ascii_lowercase();
                let rest = text[j..].trim_start();
                // Bytes: `rest` may open with a character of several.
                let by = rest
                    .as_bytes()
                    .get(..2)
                    .is_some_and(|w| w.eq_ignore_ascii_case(b"by"));
                match word.as_str() {
                    "plus" => out.push('+'),
                    "minus" => out.push('-'),
                    "times" => out.push('*'),
                    "multiplied" | "divided" if by => {
                        out.push(if word == "divided" { '/' } else { '*' });
                        j = text.len() - rest.len() + 2;
                    }
                    _ => out.push('|'),
                }
                step = j - i;
            }
            _ if c >= 0x80 => {
                let ch = text[i..].chars().next().unwrap_or(' ');
                match ch {
                    '×' | '·' | '⋅' => out.push('*'),
                    '÷' => out.push('/'),
                    '−' => out.push('-'),
                    _ => out.push('|'),
                }
                step = ch.len_utf8();
            }
            _ => out.push('|'),
        }
        i += step;
    }
    out
}

/// Whether an arithmetic answer (see [`is_arithmetic`]) is copied from the
/// prompt: its spelling (see [`arithmetic_spelling`]), once padding that
/// changes nothing is dropped (`+0`, `-0`, `*1`, `/1`, `^1`, brackets around
/// a sum or a product), appears in the prompt's, not as part of a longer
/// number; or it is a sum or a product of the same operands as one in the
/// prompt, in any order (`85 + 79` for `79 + 85`).
pub(crate) fn copied_from(prompt: &str, part: &str) -> bool {
    let want = unpadded(&arithmetic_spelling(part));
    let have = arithmetic_spelling(prompt);
    if want.is_empty() || want.contains('|') {
        return false;
    }
    let found = have.match_indices(want.as_str()).any(|(at, _)| {
        let digit = |c: Option<u8>| c.is_some_and(|c| c.is_ascii_digit() || c == b'.');
        let hb = have.as_bytes();
        !digit(at.checked_sub(1).map(|k| hb[k])) && !digit(hb.get(at + want.len()).copied())
    });
    found
        || operands_of(&want).is_some_and(|(op, mut mine)| {
            mine.sort_unstable();
            // The prompt's sums and products: runs of numbers joined by `op`.
            have.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == op))
                .filter_map(operands_of)
                .any(|(o, mut theirs)| {
                    theirs.sort_unstable();
                    o == op && theirs == mine
                })
        })
}

/// `spelling` without padding that changes no value: `+0`, `-0`, `*1`, `/1`,
/// `^1` after an operand (not `+0.5`, `*12`), a leading `0+` or `1*`, and
/// brackets in a sum or a product of numbers alone.
fn unpadded(spelling: &str) -> String {
    let mut s = spelling.to_string();
    loop {
        let before = s.len();
        for pad in ["+0", "-0", "*1", "/1", "^1"] {
            let mut from = 0;
            while let Some(k) = s[from..].find(pad).map(|k| k + from) {
                let end = k + pad.len();
                let next = s.as_bytes().get(end);
                let prev = k.checked_sub(1).map(|p| s.as_bytes()[p]);
                let whole = !next.is_some_and(|c| c.is_ascii_digit() || *c == b'.');
                let after_operand = prev.is_some_and(|c| c.is_ascii_digit() || c == b')');
                if whole && after_operand {
                    s.replace_range(k..end, "");
                } else {
                    from = k + 1;
                }
            }
        }
        for pad in ["0+", "1*"] {
            let next = s.as_bytes().get(pad.len()).copied();
            if s.starts_with(pad) && next.is_some_and(|c| c.is_ascii_digit() || c == b'(') {
                s.replace_range(..pad.len(), "");
            }
        }
        let mixed = s.contains(['-', '/', '^']) || (s.contains('+') && s.contains('*'));
        let homogeneous = !mixed;
        if homogeneous {
            s.retain(|c| c != '(' && c != ')');
        }
        if s.len() == before {
            return s;
        }
    }
}

/// The operator and the operands of a sum or a product of numbers alone
/// (`79+85` is `('+', ["79", "85"])`); none for anything else.
fn operands_of(spelling: &str) -> Option<(char, Vec<&str>)> {
    let op = if spelling.contains('+') { '+' } else { '*' };
    let parts: Vec<&str> = spelling.split(op).collect();
    let numbers = parts
        .iter()
        .all(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit() || c == b'.'));
    (parts.len() >= 2 && numbers).then_some((op, parts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backslash_before_any_character_is_read_whole() {
        // Found by `make fuzz`: `\` then a multi-byte character sliced it.
        assert!(!is_arithmetic("$\\\u{fffd}\u{fffd}boxed{4, 5}$"));
        // An escaped character is skipped whole, whatever its width.
        assert_eq!(is_arithmetic("1 + \\é 2"), is_arithmetic("1 + \\, 2"));
        assert!(is_arithmetic("3 +\\, 4"));
        // Found by `make fuzz`: a wide character before the value.
        let t = "a~swer is 10000\u{fffd}\u{fffd}Area is 79 + 85 square units";
        let at = t.find("79").unwrap_or(0);
        assert!(is_stated(t, at, at + 7));
        let t = "\u{fffd}is 79 + 85 apples";
        assert!(is_stated(t, 6, 13), "{:?}", &t[6..13]);
    }

    #[test]
    fn arithmetic_is_numbers_and_operators_only() {
        for t in [
            "79 + 85",
            "12*13",
            "7 \\times 8",
            "$2^{10}$",
            "(3+4)\\cdot 5",
            "9 ÷ 3",
            "8 - 3",
        ] {
            assert!(is_arithmetic(t), "{t}");
        }
        for t in [
            "81",
            "-5",
            "3/4",
            "\\frac{3}{4}",
            "1+\\sqrt{2}",
            "x + 1",
            "2 = 1 + 1",
            "1,234",
            "(2, 4)",
        ] {
            assert!(!is_arithmetic(t), "{t}");
        }
    }

    fn stated(text: &str, value: &str) -> bool {
        let start = text.rfind(value).expect("value in text");
        is_stated(text, start, start + value.len())
    }

    #[test]
    fn a_result_ends_the_text_or_follows_a_result_word() {
        // At the end of the text a word of the task touching it makes it the
        // task, not its result.
        assert!(!stated("So we compute 79 + 85", "79 + 85"));
        assert!(!stated("We need 12 \\times 13.", "12 \\times 13"));
        assert!(stated("So we have 79 + 85", "79 + 85"));
        assert!(stated("The total is 79 + 85 apples.", "79 + 85"));
        assert!(stated("The value: $2^{10}$.", "2^{10}"));
        assert!(stated("Adding them gives 3 \\times 4 here", "3 \\times 4"));
        assert!(!stated(
            "To add 79 + 85, you simply add them and find the result.",
            "79 + 85"
        ));
        assert!(!stated("Compute 12*13 please", "12*13"));
        assert!(!stated(
            "We need what is 6 * 7 and then more words.",
            "6 * 7"
        ));
        assert!(!stated(
            "First, 6 * 7 is the product we want to find.",
            "6 * 7"
        ));
    }

    #[test]
    fn an_expression_is_copied_when_the_prompt_spells_it() {
        let prompt = "What is 79 + 85?";
        assert!(copied_from(prompt, "79+85"));
        assert!(copied_from(prompt, "85 + 79"));
        assert!(!copied_from(prompt, "80 + 84"));
        assert!(!copied_from("What is 179 + 85?", "79+85"));
        assert!(copied_from("Compute $12 \\times 13$.", "12*13"));
        assert!(copied_from("What is 12 multiplied by 13?", "12 \\cdot 13"));
        assert!(copied_from("What is 7 times 8?", "7 × 8"));
        assert!(!copied_from("What is 7 times 8?", "7 - 8"));
        assert!(!copied_from("Subtract 6 from 15.", "15 - 6"));
        // Decoration and padding that change nothing.
        assert!(copied_from(prompt, "(79+85)"));
        assert!(copied_from(prompt, "79 \\, + \\, 85"));
        assert!(copied_from(prompt, "\\text{79 + 85}"));
        assert!(copied_from(prompt, "79 + 85 + 0"));
        assert!(copied_from(prompt, "0 + 85 + 79"));
        assert!(copied_from(prompt, "(79 + 85) \\cdot 1"));
        assert!(copied_from("What is 12 + 30 + 7?", "7 + 30 + 12"));
        // Padding is whole: `+0.5` and `*12` are values.
        assert!(!copied_from(prompt, "79 + 85 + 0.5"));
        assert!(!copied_from("What is 7 * 8?", "7 * 8 * 12"));
        assert!(!copied_from(prompt, "164 + 0"));
    }

    #[test]
    fn a_word_before_a_wide_character_is_read_without_slicing_it() {
        // `multiplied` then a character of 2, 3 or 4 bytes: the look for
        // `by` sliced its first two bytes (found by fuzzing score_batch with
        // the gold as the prompt).
        for wide in ["é", "中", "😀", "é by", "中by"] {
            let prompt = format!("What is 12 multiplied {wide} 13?");
            let _ = copied_from(&prompt, "12 \\cdot 13");
            assert!(!copied_from(&prompt, "12 - 13"), "{prompt}");
        }
        assert!(copied_from("What is 12 multiplied by 13?", "12 \\cdot 13"));
    }
}
