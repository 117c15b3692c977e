use super::hedges::{read_prose, Prose};
use super::markers::find_close;
use super::region::strip_special_tokens;
use super::*;

fn ans(text: &str) -> Option<(Vec<&str>, Rule)> {
    extract_answer(text, &ExtractOptions::default()).map(|e| (e.parts, e.rule))
}

fn one(text: &str) -> (&str, Rule) {
    let (parts, rule) = ans(text).expect("an answer");
    assert_eq!(parts.len(), 1, "{parts:?}");
    (parts[0], rule)
}

#[test]
fn boxes_with_nested_and_escaped_braces() {
    assert_eq!(
        one("so \\boxed{\\frac{1}{2}} done"),
        ("\\frac{1}{2}", Rule::Boxed)
    );
    assert_eq!(one("\\boxed{\\{1, 2\\}}"), ("\\{1, 2\\}", Rule::Boxed));
    assert_eq!(one("\\fbox{7}"), ("7", Rule::Boxed));
    assert_eq!(one("$\\boxed 5$"), ("5", Rule::Boxed));
    assert_eq!(one("\\boxed { 3 }"), ("3", Rule::Boxed));
    // A box inside a box is one answer.
    assert_eq!(one("\\boxed{\\boxed{3}}"), ("\\boxed{3}", Rule::Boxed));
}

#[test]
fn several_boxes_are_all_parts() {
    let (parts, rule) = ans("\\boxed{(2,2)} and \\boxed{(6,2)}").expect("boxes");
    assert_eq!(parts, vec!["(2,2)", "(6,2)"]);
    assert_eq!(rule, Rule::Boxed);
}

#[test]
fn an_unclosed_box_is_a_cut_off_answer() {
    let o = ExtractOptions::default();
    for text in [
        "the answer is 4. \\boxed{4",
        "\\boxed{3} so finally \\boxed{\\frac{1}{2}",
        "\\boxed{\\boxed{3}",
    ] {
        assert_eq!(
            find_answer(text, &o, Hints::default()).err(),
            Some(UNCLOSED_BOX),
            "{text}"
        );
    }
    assert_eq!(
        ans("\\boxedx{4}"),
        Some((vec!["\\boxedx{4}"], Rule::LastNumber))
    );
    // A blank is no answer; another rule may find one.
    assert_eq!(ans("\\boxed{}"), None);
    assert_eq!(
        ans("Fill in \\boxed{\\phantom{7}}: the answer is 7."),
        Some((vec!["7"], Rule::AnswerIs))
    );
    assert_eq!(
        ans("Put it in $\\boxed{\\quad}$. So \\boxed{7}"),
        Some((vec!["7"], Rule::Boxed))
    );
}

#[test]
fn box_beats_other_markers() {
    assert_eq!(
        one("Answer: 3\n#### 4\n\\boxed{5} the answer is 6"),
        ("5", Rule::Boxed)
    );
}

#[test]
fn answer_tag_last_pair() {
    assert_eq!(
        one("<think>hm</think><answer> 4 </answer> <answer>x = 5</answer>"),
        ("x = 5", Rule::AnswerTag)
    );
    assert_eq!(one("<ANSWER>7</ANSWER>"), ("7", Rule::AnswerTag));
}

#[test]
fn minerva_final_answer() {
    assert_eq!(
        one("Final Answer: The final answer is $\\frac{3}{4}$. I hope it is correct."),
        ("$\\frac{3}{4}$", Rule::FinalAnswer)
    );
    assert_eq!(
        one("Final Answer: The final answer is 12. I hope it is correct."),
        ("12", Rule::FinalAnswer)
    );
}

#[test]
fn gsm8k_hashes_last_wins() {
    assert_eq!(one("a\n#### 70\nwait\n#### 72"), ("72", Rule::Gsm8k));
    assert_eq!(one("#### 1,080\n"), ("1,080", Rule::Gsm8k));
}

#[test]
fn answer_colon_forms() {
    assert_eq!(one("Answer: 42"), ("42", Rule::AnswerColon));
    assert_eq!(one("**Answer:** 42."), ("42", Rule::AnswerColon));
    assert_eq!(one("**Answer: 42**"), ("42", Rule::AnswerColon));
    assert_eq!(
        one("Answer: 1\nno, Answer: 2\nthanks"),
        ("2", Rule::AnswerColon)
    );
}

#[test]
fn answer_is_sentence() {
    assert_eq!(
        one("So the answer is 3.5. Done, 7 steps."),
        ("3.5", Rule::AnswerIs)
    );
    assert_eq!(one("The answer is: (B)"), ("(B)", Rule::AnswerIs));
    assert_eq!(
        one("the answer is 1. No wait, the answer is 2."),
        ("2", Rule::AnswerIs)
    );
    assert_eq!(
        one("The answer is $x = 5$. Also 7."),
        ("$x = 5$", Rule::AnswerIs)
    );
}

#[test]
fn last_value_picks_the_latest() {
    assert_eq!(one("first 3 then 4"), ("4", Rule::LastNumber));
    assert_eq!(one("so $\\frac{1}{2}$"), ("$\\frac{1}{2}$", Rule::MathSpan));
    assert_eq!(one("it is $x=2$, then 9"), ("9", Rule::LastNumber));
    assert_eq!(one("total **12** apples"), ("12", Rule::Bold));
    assert_eq!(one("so -1,234.5 m"), ("-1,234.5", Rule::LastNumber));
    // The whole expression the last number is part of, or nothing.
    assert_eq!(
        one("so it is \\frac{639}{40}"),
        ("\\frac{639}{40}", Rule::LastNumber)
    );
    assert_eq!(one("so z = 1+2i"), ("z = 1+2i", Rule::LastNumber));
    assert_eq!(one("about 3/4 of it"), ("3/4", Rule::LastNumber));
    assert_eq!(one("that is 12%."), ("12%", Rule::LastNumber));
    // Digit groups joined by commas are one value for the parser: a
    // decimal comma (`1,23`), or a list, never its last number alone.
    assert_eq!(one("pick 2, 1,23"), ("2, 1,23", Rule::LastNumber));
    assert_eq!(one("we get 1,2,3"), ("1,2,3", Rule::LastNumber));
    assert_eq!(one("the point is (3,4)."), ("(3,4)", Rule::LastNumber));
    assert_eq!(
        one("it costs 1,250.50 dollars"),
        ("1,250.50", Rule::LastNumber)
    );
    assert_eq!(one("\\[ x^2 \\] ok"), ("\\[ x^2 \\]", Rule::MathSpan));
    assert_eq!(one("I choose (C) here"), ("C", Rule::Choice));
    assert_eq!(one("so it must be B."), ("B", Rule::Choice));
    assert_eq!(ans("no value here at all"), None);
    assert_eq!(ans("Is it A cat?"), None);
}

#[test]
fn a_bare_completion_is_its_own_answer() {
    assert_eq!(one("\\frac{0}{1}"), ("\\frac{0}{1}", Rule::Bare));
    assert_eq!(one(" 1 000 "), ("1 000", Rule::Bare));
    assert_eq!(one("x \\ge 2"), ("x \\ge 2", Rule::Bare));
    assert_eq!(one("\\text{odd}"), ("\\text{odd}", Rule::Bare));
    assert_eq!(one("yes"), ("yes", Rule::Bare));
    assert_eq!(one("W(x)=1orW(x)=-1"), ("W(x)=1orW(x)=-1", Rule::Bare));
    assert_eq!(one("2xy+1"), ("2xy+1", Rule::Bare));
    // Prose is not an answer: the last value is.
    assert_eq!(one("it is 5"), ("5", Rule::LastNumber));
    assert_eq!(one("two cats and 3 dogs"), ("3", Rule::LastNumber));
    assert_eq!(one("so $x$\n5"), ("5", Rule::LastNumber));
}

#[test]
fn prose_after_a_marker_gives_its_last_value() {
    assert_eq!(
        one("Final Answer: The largest $n$ is 34."),
        ("34", Rule::AnswerColon)
    );
    assert_eq!(one("the answer is 3 apples"), ("3", Rule::AnswerIs));
    assert_eq!(one("Answer: Paris"), ("Paris", Rule::AnswerColon));
    assert_eq!(one("Answer: New York"), ("New York", Rule::AnswerColon));
}

#[test]
fn numbers_mixed_percent_and_names() {
    assert_eq!(one("it is 4 4/9 of them"), ("4 4/9", Rule::LastNumber));
    assert_eq!(
        one("it is 4 4/9 percent"),
        ("4 4/9 percent", Rule::LastNumber)
    );
    assert_eq!(one("so 12\\% of it"), ("12\\%", Rule::LastNumber));
    assert_eq!(one("so 12pct of it"), ("12pct", Rule::LastNumber));
    assert_eq!(one("so 12 pctx"), ("12", Rule::LastNumber));
    assert_eq!(one("see 3 and AZYUK2A"), ("3", Rule::LastNumber));
}

#[test]
fn last_value_only_near_the_end() {
    let text = format!("x = 5 {}", "words ".repeat(200));
    assert_eq!(ans(&text), None);
    let opts = ExtractOptions {
        tail_len: 10_000,
        ..ExtractOptions::default()
    };
    let e = extract_answer(&text, &opts).expect("found with a wide tail");
    assert_eq!(e.parts, vec!["x = 5"]);
}

#[test]
fn configurable_rules() {
    let opts = ExtractOptions {
        rules: vec![Rule::Gsm8k, Rule::Boxed],
        ..ExtractOptions::default()
    };
    let e = extract_answer("\\boxed{1}\n#### 2", &opts).expect("gsm8k first");
    assert_eq!((e.parts, e.rule), (vec!["2"], Rule::Gsm8k));
    let only_box = ExtractOptions {
        rules: vec![Rule::Boxed],
        ..ExtractOptions::default()
    };
    assert_eq!(extract_answer("Answer: 3", &only_box), None);
    assert_eq!(Rule::from_name("gsm8k"), Some(Rule::Gsm8k));
    assert_eq!(Rule::from_name("bare"), Some(Rule::Bare));
    assert_eq!(Rule::from_name("nope"), None);
    for r in Rule::ALL {
        assert!(<Rule as VariantNames>::VARIANTS.contains(&r.name()));
    }
}

#[test]
fn gold_is_bare_unless_marked() {
    let o = ExtractOptions::default();
    let g = |t| extract_gold(t, &o).map(|e| (e.parts, e.rule));
    assert_eq!(g(" \\frac34 "), Some((vec!["\\frac34"], Rule::Bare)));
    assert_eq!(g("x \\ge 2"), Some((vec!["x \\ge 2"], Rule::Bare)));
    assert_eq!(
        g("She has 3 + 4 = 7.\n#### 72"),
        Some((vec!["72"], Rule::Gsm8k))
    );
    assert_eq!(g("   "), None);
}

#[test]
fn length_limit() {
    let opts = ExtractOptions {
        max_len: 8,
        ..ExtractOptions::default()
    };
    assert!(over_limit("\\boxed{12}", &opts));
    assert_eq!(extract_answer("\\boxed{12}", &opts), None);
    assert_eq!(extract_gold("\\boxed{12}", &opts), None);
}

#[test]
fn utf8_tail_boundary() {
    let text = format!("{} 7", "é".repeat(400));
    assert_eq!(one(&text), ("7", Rule::LastNumber));
}

#[test]
fn pathological_inputs_stay_linear() {
    // 10^5 nested braces, unclosed: no answer and no stack growth.
    let deep = format!("\\boxed{}", "{".repeat(100_000));
    let _ = ans(&deep);
    // The same answer boxed many times is one answer; different ones are all parts.
    let many = "\\boxed{1}".repeat(20_000);
    assert_eq!(ans(&many).map(|(p, _)| p.len()), Some(1));
    let distinct: String = (0..20_000).map(|k| format!("\\boxed{{{k}}}")).collect();
    assert_eq!(hedge(&distinct), Some(Hedge::Proposed));
    let find_all: String = (0..64).map(|k| format!("\\boxed{{{k}}}")).collect();
    assert_eq!(ans(&find_all).map(|(p, _)| p.len()), Some(64));
    let dollars = "$".repeat(100_001);
    let _ = ans(&dollars);
    let stars = "*".repeat(100_001);
    let _ = ans(&stars);
}

fn hedge(text: &str) -> Option<Hedge> {
    extract_answer(text, &ExtractOptions::default()).and_then(|e| e.hedge)
}

#[test]
fn alternatives_after_a_marker_are_the_answer_together() {
    for (text, want) in [
        ("the answer is 1, 2, or 3", "1, 2, or 3"),
        ("The answer is (A) or (C)", "(A) or (C)"),
        ("Answer: 4 or 3", "4 or 3"),
        ("#### 4 or 3", "4 or 3"),
        ("So the answer is either 4 or 3 apples.", "4 or 3"),
        ("The answer is $x<1$ or $x>3$.", "$x<1$ or $x>3$"),
        ("Answer: x = 2 or x = -2", "x = 2 or x = -2"),
        (
            "Final Answer: The final answer is $3$ or $4$. I hope it is correct.",
            "$3$ or $4$",
        ),
        // A span followed by more alternatives in the same sentence.
        ("The answer is $3$, or $4$", "$3$, or $4$"),
        ("The answer is $3$ (or $4$)", "$3$ (or $4$"),
        ("The answer is $3$ and/or $4$.", "$3$ and/or $4$"),
        ("The answer is $3$ \u{2014} or $4$", "$3$ \u{2014} or $4$"),
        (
            "Final Answer: The final answer is $3$ (or $4$). I hope it is correct.",
            "$3$ (or $4$",
        ),
        // Hedging words between `or` and its value.
        ("The answer is 3, or perhaps 4.", "3, or perhaps 4"),
        (
            "The answer is $3$ or maybe even $4$",
            "$3$ or maybe even $4$",
        ),
        ("The answer is $3$ (possibly $4$)", "$3$ (possibly $4$"),
        ("Answer: 3, probably 4", "3, probably 4"),
    ] {
        let e = extract_answer(text, &ExtractOptions::default()).expect(text);
        assert_eq!(e.parts, vec![want], "{text}");
        assert_eq!(e.hedge, Some(Hedge::Alternatives), "{text}");
        assert_ne!(e.rule, Rule::LastValue);
    }
    assert_eq!(hedge("\\boxed{381 or 391}"), Some(Hedge::Alternatives));
    // `or` that offers no second value is no hedge.
    // A bound is no answer (`3 or more`), nor is a dangling `or`.
    assert_eq!(
        hedge("the answer is 3 or more apples"),
        Some(Hedge::Qualified)
    );
    assert_eq!(hedge("the answer is 3 or"), Some(Hedge::Unfinished));
    assert_eq!(
        one("the answer is 3, or equivalently 6/2"),
        ("3", Rule::AnswerIs)
    );
    assert_eq!(one("The answer is probably 3."), ("3", Rule::AnswerIs));
    // A span followed by other values that are no alternatives stays the answer.
    assert_eq!(
        one("The answer is $5$ because $x = 2$."),
        ("$5$", Rule::AnswerIs)
    );
    assert_eq!(one("The answer is $5$, not $4$."), ("$5$", Rule::AnswerIs));
    assert_eq!(
        one("Answer: $12$ (or, in words, twelve)"),
        ("$12$", Rule::AnswerColon)
    );
}

#[test]
fn a_negated_answer_is_a_hedge() {
    for text in [
        "the answer is not 3",
        "The answer is not $3$.",
        "the answer isn't 3",
        "Answer: it is never 3",
        "the answer is not 3 or 4",
        "\\boxed{\\text{not } 3}",
    ] {
        assert_eq!(hedge(text), Some(Hedge::Negated), "{text}");
    }
    // The value that is not negated answers.
    assert_eq!(one("Answer: 5, not 3"), ("5", Rule::AnswerColon));
    assert_eq!(one("the answer is not 3 but 4"), ("4", Rule::AnswerIs));
    assert_eq!(hedge("the answer is not 3 but 4"), None);
    // `\neq` is math, not a word.
    assert_eq!(hedge("Answer: x \\neq 3"), None);
}

#[test]
fn escaped_dollars_do_not_close_a_span() {
    assert_eq!(
        one("The final answer is $\\$18$. I hope it is correct."),
        ("$\\$18$", Rule::FinalAnswer)
    );
    assert_eq!(one("The answer is $\\$18$."), ("$\\$18$", Rule::AnswerIs));
    assert_eq!(one("Answer: $\\$18$"), ("$\\$18$", Rule::AnswerColon));
    assert_eq!(find_close("\\$18$", "$"), Some(4));
    assert_eq!(find_close("a\\\\$", "$"), Some(3));
}

#[test]
fn a_value_with_its_unit_is_a_bare_answer() {
    // docs/verify_semantics.md: trailing units are decoration, after a
    // value or a constant expression (`2\pi \text{ cm}` = `2\pi`).
    assert_eq!(one("2\\pi cm"), ("2\\pi cm", Rule::Bare));
    assert_eq!(one("12 meters."), ("12 meters.", Rule::Bare));
    assert_eq!(one("3\\sqrt2 inches"), ("3\\sqrt2 inches", Rule::Bare));
    // Prose is not: a word that is no unit, or a unit before more words.
    assert_eq!(one("2\\pi apples"), ("2\\pi", Rule::LastNumber));
    // A compound quantity is one answer (rule 15), never its last number.
    assert_eq!(
        one("5 dollars and 3 cents"),
        ("5 dollars and 3 cents", Rule::LastNumber)
    );
    assert_eq!(ans("cm"), Some((vec!["cm"], Rule::Bare)));
}

#[test]
fn a_bold_completion_is_its_answer() {
    assert_eq!(one("**42**"), ("42", Rule::Bare));
    assert_eq!(one(" **$42$** "), ("$42$", Rule::Bare));
    assert_eq!(one("**Answer:** 42"), ("42", Rule::AnswerColon));
}

#[test]
fn only_the_text_after_the_last_think_counts() {
    let o = ExtractOptions::default();
    assert_eq!(
        one("<think>\\boxed{3}</think> so \\boxed{5}"),
        ("5", Rule::Boxed)
    );
    assert_eq!(
        one("<think>a</think>x<think>b</think> the answer is 7"),
        ("7", Rule::AnswerIs)
    );
    // The opening tag may sit in the prompt.
    assert_eq!(
        one("hmm \\boxed{3} ok</think>Answer: 4"),
        ("4", Rule::AnswerColon)
    );
    // Nothing after the reasoning, or reasoning never closed: no answer.
    assert_eq!(ans("<think>\\boxed{3}</think>"), None);
    assert_eq!(ans("<think>so \\boxed{3}"), None);
    assert_eq!(ans("<think>a</think> 4 <think>b \\boxed{3}"), None);
    assert_eq!(answer_region("<think>x", &o), Err(UNCLOSED_THINK));
    // No tags: the whole text.
    assert_eq!(one("\\boxed{3}"), ("3", Rule::Boxed));
    // Turned off, the whole text is searched.
    let off = ExtractOptions {
        think: false,
        ..ExtractOptions::default()
    };
    let e = extract_answer("<think>so \\boxed{3}", &off).expect("found");
    assert_eq!(e.parts, vec!["3"]);
    let e = extract_answer("<think>\\boxed{3}</think> and \\boxed{3}", &off).expect("found");
    // The same answer twice is one answer.
    assert_eq!(e.parts, vec!["3"]);
    // The tags are not an answer: the choice after them is.
    let e = extract_answer("<think>hmm</think> (C)", &off).expect("found");
    assert_eq!((e.parts, e.rule), (vec!["C"], Rule::Choice));
}

#[test]
fn special_tokens_are_not_text() {
    for (text, want) in [
        ("#### 72<|im_end|>", "72"),
        ("Answer: 72<eos>", "72"),
        ("The answer is 42</s>", "42"),
        (
            "The answer is 42<|endoftext|><|endoftext|><|endoftext|>",
            "42",
        ),
        ("\\boxed{9}<|eot_id|>", "9"),
        ("#### 72 <pad><pad><pad>", "72"),
        ("#### 72<|im_end|>\n<|endoftext|>", "72"),
        ("the answer is 5<｜end▁of▁sentence｜>", "5"),
        ("Answer: 72<|im_end|> trailing", "72"),
        ("so it is 8<end_of_turn>", "8"),
    ] {
        let e = extract_answer(text, &ExtractOptions::default()).expect(text);
        assert_eq!(e.parts, vec![want], "{text:?}");
    }
    assert_eq!(strip_special_tokens("a <b>"), "a <b>");
    assert_eq!(
        strip_special_tokens("x<| not a token |>"),
        "x<| not a token |>"
    );
    let g = extract_gold("72<|im_end|>", &ExtractOptions::default()).expect("gold");
    assert_eq!(g.parts, vec!["72"]);
}

fn prose(v: &str) -> Prose<'_> {
    read_prose(v).prose
}

#[test]
fn prose_reader() {
    assert_eq!(prose("4 or 3"), Prose::Alternatives("4 or 3"));
    assert_eq!(prose("not 3"), Prose::Negated);
    assert_eq!(prose("5, not 3"), Prose::Upto(1));
    assert_eq!(prose("The largest $n$ is 34"), Prose::Plain);
    assert_eq!(prose("or 3"), Prose::Plain);
    assert_eq!(
        prose("\\frac{1}{2} or \\frac{1}{3}"),
        Prose::Alternatives("\\frac{1}{2} or \\frac{1}{3}")
    );
    // Unbalanced input ends, linear.
    let _ = read_prose(&"\\frac{".repeat(10_000));
    let _ = read_prose(&"$".repeat(10_001));
    let _ = read_prose(&"not 1 or ".repeat(10_000));
    let _ = read_prose(&"\\(".repeat(100_000));
    let _ = read_prose(&"$$ \\[".repeat(50_000));
}

proptest::proptest! {
    #[test]
    fn parts_are_substrings(s in "[\\\\{}$*()#a-zA-Z0-9 :.,<>/\n-]{0,200}") {
        for f in [extract_answer, extract_gold] {
            if let Some(e) = f(&s, &ExtractOptions::default()) {
                for p in e.parts {
                    let start = p.as_ptr() as usize - s.as_ptr() as usize;
                    proptest::prop_assert!(start + p.len() <= s.len());
                }
            }
        }
    }
}

#[test]
fn a_value_after_a_marker_keeps_it_a_marker() {
    // `boxed` after the value is no judgement of the marker (`is boxed below`).
    assert_eq!(
        ans("final answer is $9999$, \\boxed{1}").map(|(p, _)| p),
        Some(vec!["1"])
    );
    let opts = ExtractOptions {
        rules: vec![Rule::FinalAnswer],
        ..ExtractOptions::default()
    };
    let e = extract_answer("final answer is $9999$, \\boxed{1}", &opts).expect("found");
    assert_eq!(e.parts, vec!["$9999$"]);
    // A judgement right after the marker is still none.
    assert_eq!(extract_answer("so my answer is correct.", &opts), None);
}

#[test]
fn a_sign_or_a_judgement_can_bound_or_deny_a_value() {
    for text in ["Answer: 5+ people", "We need 5+ coins.", "\\boxed{5+}"] {
        assert_eq!(hedge(text), Some(Hedge::Qualified), "{text}");
    }
    for text in ["Answer: 5+3", "Answer: 5 + x", "\\boxed{5+\\sqrt{2}}"] {
        assert_eq!(hedge(text), None, "{text}");
    }
    assert_eq!(
        hedge("It is impossible for the answer to be 5."),
        Some(Hedge::Negated)
    );
    // A later value said to be an answer too is an alternative.
    for text in [
        "The answer is \\(4\\), though \\(5\\) is also possible.",
        "The answer is 4, but 5 is also valid.",
    ] {
        assert_eq!(hedge(text), Some(Hedge::Alternatives), "{text}");
    }
    assert_eq!(
        hedge("The answer is 4, which is also the smallest even square."),
        None
    );
    // Denying the other letter is no alternative.
    assert_eq!(hedge("The answer is C, not D"), None);
}

#[test]
fn a_variable_after_a_number_stays_and_a_unit_is_no_letter() {
    assert_eq!(one("so the total is 10x").0, "10x");
    assert_eq!(one("so the count is 3n").0, "3n");
    assert_eq!(one("so the rod is 5 m long").0, "5");
    for text in [
        "The water is at 25°C",
        "It reaches 100^{\\circ}C",
        "The final temperature is $25^\\circ C$",
    ] {
        assert_ne!(one(text).1, Rule::Choice, "{text}");
    }
}

#[test]
fn a_marker_followed_by_no_sentence_has_no_value() {
    // Found by fuzzing: `####` then more `#` (no line value) computed the
    // sentence's offset from a static "" and overflowed.
    for text in [
        "x ####################",
        "#### ####\0\0\0####",
        "The answer is ####",
    ] {
        let _ = extract_gold(text, &ExtractOptions::default());
        let _ = extract_answer(text, &ExtractOptions::default());
    }
    let t = "x'^{9999999} -99 x^{999999998############\0\0\0##################}";
    assert!(extract_gold(t, &ExtractOptions::default()).is_none_or(|e| !e.parts.is_empty()));
}

#[test]
fn other_languages_or_maybe_and_not_are_hedges() {
    // `or` between two values: alternatives, in any of these languages.
    for text in [
        "The answer is 5 oder 6.",
        "The answer is 5 ou 6.",
        "The answer is 5 oppure 6.",
        "The answer is 5 или 6.",
    ] {
        assert_eq!(hedge(text), Some(Hedge::Alternatives), "{text}");
    }
    // `maybe` before the value, `not` before the value: not a committed answer.
    for text in [
        "Answer: vielleicht 5",
        "Answer: forse 5",
        "Answer: talvez 5",
        "Answer: quizás 5",
        "Answer: возможно 5",
        "Answer: nicht 5",
        "Answer: não 5",
        "Answer: не 5",
    ] {
        assert!(hedge(text).is_some(), "{text}");
    }
    // A committed answer still pays.
    assert_eq!(hedge("Answer: 5"), None);
    assert_eq!(one("The answer is 5."), ("5", Rule::AnswerIs));
}

#[test]
fn an_operand_expression_mid_sentence_is_not_a_result() {
    let hedge = |t: &str| extract_answer(t, &ExtractOptions::default()).and_then(|e| e.hedge);
    for t in [
        "To add 79 + 85, you simply add them and find the result.",
        "Compute 12*13 please",
        "We need $7 \\times 8$ here, which is a product.",
    ] {
        assert_eq!(hedge(t), Some(Hedge::Unevaluated), "{t}");
    }
    for t in [
        "23 + 58 = 81",
        "So the total is 79 + 85.",
        "79 + 85",
        "The sum is 81 apples.",
    ] {
        assert_eq!(hedge(t), None, "{t}");
    }
}

#[test]
fn the_pronoun_i_ends_an_expression() {
    assert_eq!(one("So x = 3, I think that's the answer.").0, "x = 3");
    assert_eq!(one("**3** I think that's the answer.").0, "3");
    // A single capital before a symbol is still a variable.
    assert_eq!(one("so it is 2I").0, "2I");
}

/// The text a reader sees: `text` with hidden runs replaced by spaces.
fn seen(text: &str) -> String {
    super::hidden::shown(text)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn hidden_text_is_blanked_and_decoration_keeps_what_it_decorates() {
    for (text, want) in [
        ("The answer is ~~5~~ 6.", "The answer is 6."),
        ("a <!-- b --> c", "a c"),
        ("a <!-- b", "a"),
        ("<span style=\"display: none\">5</span>6", "6"),
        ("<span style='visibility:hidden'>5</span>6", "6"),
        ("<div hidden>5</div>6", "6"),
        ("<span style=\"font-size:0px\">5</span>6", "6"),
        ("<font color=\"#FFF\">5</font>6", "6"),
        ("<p style=\"color:transparent\">5</p>6", "6"),
        ("<span style=\"display:none\"><span>5</span> 7</span>6", "6"),
        ("<s>5</s> <DEL>4</DEL> <strike>3</strike> 6", "6"),
        ("\\color{white}{5} 6", "6"),
        ("{\\color{white} 5} 6", "{ } 6"),
        ("\\textcolor{white}{5} 6", "6"),
        ("\\color[rgb]{1,1,1}{5} 6", "6"),
        ("\\phantom{5}6 \\hphantom{7} \\vphantom{8}", "6"),
        ("\\llap{5}6 \\mathrlap{7}", "6"),
        ("6[^note]\n\n[^note]: it is 5\n    really 5\nend", "6 end"),
        // Decoration: only the markup goes.
        ("<b>3</b> <u>4</u> <em>5</em>", "3 4 5"),
        ("\\color{blue}{36}", "{36}"),
        ("\\textcolor{red}{36}", "{36}"),
        ("\\smash[b]{36}", "{36}"),
        (
            "<span style=\"color:red; background-color:white\">36</span>",
            "36",
        ),
    ] {
        assert_eq!(seen(text), want, "{text}");
    }
    // Not hidden: LaTeX spacing, an unpaired `~~`, comparisons, a BOS token,
    // words that contain `lap` or `color`.
    for text in [
        "$x~~=~~5$",
        "a ~~ b",
        "x < 5 and y > 3",
        "<s> The answer is 5",
        "overlap \\colorbox{red}{5} colorful",
        "~~a\n\nb~~",
    ] {
        assert_eq!(
            seen(text),
            text.split_whitespace().collect::<Vec<_>>().join(" "),
            "{text}"
        );
    }
}

#[test]
fn hidden_text_neither_answers_nor_hedges() {
    assert_eq!(one("\\boxed{5}<!-- or 6 -->"), ("5", Rule::Boxed));
    assert_eq!(one("The answer is ~~5~~ 6."), ("6", Rule::AnswerIs));
    assert_eq!(one("<s>\\boxed{5}</s> \\boxed{6}"), ("6", Rule::Boxed));
    assert_eq!(
        find_answer(
            "\\boxed{5} <span hidden>or maybe 6</span>",
            &ExtractOptions::default(),
            Hints::default()
        )
        .map(|e| e.hedge),
        Ok(None)
    );
    // The answer is a slice of the completion as written.
    let text = "The answer is <b>36</b>.";
    let (part, _) = one(text);
    assert_eq!(part, "36");
    let at = part.as_ptr() as usize - text.as_ptr() as usize;
    assert_eq!(&text[at..at + 2], "36");
    // A box that only hides is empty.
    assert_eq!(ans("\\boxed{\\color{white}{5}}"), None);
}

#[test]
fn hidden_text_in_hostile_inputs_ends_quickly() {
    for text in [
        "<s>".repeat(80_000),
        "~~a ".repeat(60_000),
        "<!--".repeat(60_000),
        "\\color{".repeat(30_000),
        "\\textcolor[".repeat(20_000),
        "\\phantom{".repeat(25_000),
        "<span style=\"display:none\">".repeat(8_000),
        "[^1".repeat(80_000),
        "<del>".repeat(25_000) + &"</del>".repeat(20_000),
        "<b ".repeat(80_000),
    ] {
        let start = std::time::Instant::now();
        let _ = super::hidden::shown(&text);
        let _ = extract_answer(&text, &ExtractOptions::default());
        assert!(start.elapsed().as_millis() < 10_000, "{}", &text[..20]);
    }
}

#[test]
fn an_answer_taken_back_after_it_is_given_is_a_hedge() {
    let hedge = |t: &str| {
        find_answer(t, &ExtractOptions::default(), Hints::default())
            .ok()
            .and_then(|e| e.hedge)
    };
    for text in [
        "So the answer is 16. Actually no, it isn't.",
        "\\boxed{16} no wait, I made an error.",
        "So we get 16. Oops, I made a mistake.",
        "\\boxed{16}. Hmm, that doesn't seem right.",
        "Answer: 16\n\nWait, I think I made an error in step 2.",
        "Therefore 16. That's not it.",
        "Final answer: 16. Just kidding.",
        "The answer is 16. Scratch that.",
        "The answer is 16. Never mind.",
        "The answer is 16. Ignore that.",
        "The answer is 16. Please disregard the above answer.",
        "The answer is 16. I take it back.",
        "The answer is 16. That was a joke!",
        "The answer is 16. Or not.",
        "\\boxed{16}, or not",
        "The answer is 16. Forget it, I am confused.",
    ] {
        assert!(hedge(text).is_some(), "{text}");
    }
    for text in [
        "The answer is \\boxed{16}. My answer is correct.",
        "The answer is 16. I checked: 16 is right.",
        "So the answer is 16. No mistakes.",
        "The answer is 16. This is correct; I made no mistakes.",
        "\\boxed{16}. There is no error in this computation.",
        "\\boxed{16}. The relative error is 0.5%.",
        "We get 16. It is not negative, so it works.",
        "\\boxed{16}. The other option is wrong.",
        "The answer is 16. We ignore that root since x > 0.",
        "The answer is 16. We disregard the negative root.",
        "The answer is 16 whether or not n is even.",
        "The answer is 16. I am not kidding.",
        "The answer is 16. No kidding.",
        "The answer is 16. This was not a joke.",
    ] {
        assert_eq!(hedge(text), None, "{text}");
    }
    // A denied value is compared by the verifier: it voids the answer it is.
    fn denied(t: &str) -> Vec<OfferValue<'_>> {
        extract_answer(t, &ExtractOptions::default())
            .map(|e| {
                e.offers
                    .iter()
                    .filter(|o| o.kind == OfferKind::Denied)
                    .map(|o| o.value)
                    .collect()
            })
            .unwrap_or_default()
    }
    assert_eq!(
        denied("\\boxed{16}. But wait, so 16 is not the answer after all."),
        vec![OfferValue::Text("16")]
    );
    assert_eq!(
        denied("The answer is 16, although this is incorrect."),
        vec![OfferValue::Text("16")]
    );
    assert_eq!(
        denied("\\boxed{16}. 15 is wrong."),
        vec![OfferValue::Text("15")]
    );
    assert_eq!(denied("\\boxed{16}. 16 is right."), vec![]);
}

#[test]
fn the_last_row_of_a_table_or_list_of_cases_is_no_answer() {
    let hedge = |t: &str| extract_answer(t, &ExtractOptions::default()).and_then(|e| e.hedge);
    for t in [
        "| n odd | 3 |\n|---|---|\n| n even | 4 |",
        "| case | value |\n|---|---|\n| n odd | 3 |\n| n even | 4 |",
        "- if n is odd: 3\n- if n is even: 4",
        "1. For n = 1: 3\n2. For n = 2: 4",
    ] {
        assert_eq!(hedge(t), Some(Hedge::Cases), "{t}");
    }
    for t in [
        "| apples | 5 |\n| pears | 7 |\n| Total | 12 |",
        "1. Add 5 and 7.\n2. The sum is 12.",
        "- odd n: 3 ways\n- even n: 4 ways\n- Total: 7",
        "- if n is odd: 4\n- if n is even: 4",
        "if n is odd: 3\nif n is even: 4 and so the answer is 4",
        "1. 3 + 4 = 7\n2. 7 \\times 2 = 14",
        "- x = 5\n- y = 7\n- x + y = 12",
    ] {
        assert_eq!(hedge(t), None, "{t}");
    }
}

#[test]
fn no_solution_is_an_answer_not_a_retraction() {
    // `no` before `solution` / `answer` is a determiner: the answer is that there is none.
    for text in [
        "The answer is No solution",
        "The answer is \\text{No solution}",
        "Answer: no solution.",
    ] {
        let e = extract_answer(text, &ExtractOptions::default()).expect(text);
        assert!(e.hedge.is_none(), "{text}: {:?}", e.hedge);
    }
    // A verdict after an answer still takes it back.
    let e = extract_answer(
        "The answer is 16. No, that's not right.",
        &ExtractOptions::default(),
    );
    assert!(e.is_none_or(|e| e.hedge.is_some()));
}

#[test]
fn a_letter_run_answers_only_a_letter_gold() {
    let letter = Hints {
        choice: true,
        ..Hints::default()
    };
    let o = ExtractOptions::default();
    let part = |text: &str, hints: Hints| {
        find_answer(text, &o, hints)
            .ok()
            .and_then(|e| (e.hedge.is_none()).then(|| e.parts.concat()))
    };
    assert_eq!(
        part("Therefore, the string would be CCCC.", letter).as_deref(),
        Some("CCCC")
    );
    assert_eq!(part("so we pick K", letter).as_deref(), Some("K"));
    // Different letters are no run; without a letter gold a run is no letter.
    assert_ne!(
        part("the string would be ABCD", letter).as_deref(),
        Some("D")
    );
    assert_eq!(part("the string would be CCCC", Hints::default()), None);
    // A letter with its option's text is the answer whole; two options hedge.
    assert_eq!(
        part("the best answer is C: 42 apples", letter).as_deref(),
        Some("C: 42 apples")
    );
    assert_eq!(
        part(
            "the best answer is C: 42 apples or D: 43 pears",
            Hints::default()
        ),
        None
    );
}

#[test]
fn a_range_or_a_set_of_candidates_is_no_value() {
    // Rule 14: every end of a range is voided, the last one included.
    fn got(t: &str) -> Option<(Vec<&str>, Option<Hedge>)> {
        extract_answer(t, &ExtractOptions::default()).map(|e| (e.parts, e.hedge))
    }
    for t in [
        "The answer is between 4 and 6.",
        "The value lies in the range 7 to 9.",
        "Answer: from 7 to 9",
        "The answer is one of 12, 13 and 14.",
        "The answer is 5 to 7.",
        "The answer is 5 through 7.",
        "The answer is 5\u{2013}7.",
        "The answer is roughly 10-12.",
        "So there are between 5 and 7 apples.",
        "It takes 5-7 days.",
        "It takes 5 \u{2014} 7 days.",
        "\\boxed{5 \\text{ to } 7}",
        "\\boxed{\\text{between 5 and 7}}",
        "<answer>from 5 to 7</answer>",
        "The answer is any of 12, 13, 14.",
        "The answer is roughly 10-12%.",
        "It takes 4 - 6 days.",
        "The answer is 4--6.",
        "So there are 4~6 apples.",
        "The answer is $4$\u{2013}$6$.",
    ] {
        assert_eq!(got(t).and_then(|e| e.1), Some(Hedge::Range), "{t}");
    }
    // A stated value beside a range, a change, a subtraction and a lone
    // `between` are no range.
    for (t, want) in [
        ("The answer is 5 (between 4 and 6 as expected).", "5"),
        ("x = 5, between the two roots", "x = 5"),
        ("We check that 12 lies between 10 and 15.", "12"),
        ("So we round 4.6 to 5.", "5"),
        ("The temperature rose from 5 to 7.", "7"),
        ("The sum of the integers from 1 to 10 is 55.", "55"),
        ("So we get 10-6 = 4", "10-6 = 4"),
        ("Thus one of the roots is 3.", "3"),
        ("\\boxed{10 \u{2013} 3}", "10 \u{2013} 3"),
        // Two values in brackets are the interval (or point) they write.
        ("The answer is within [4, 6].", "[4, 6]"),
        ("The answer is the set [4, 6].", "[4, 6]"),
    ] {
        let (parts, hedge) = got(t).expect(t);
        assert_eq!((parts, hedge), (vec![want], None), "{t}");
    }
}

#[test]
fn a_compound_quantity_is_one_answer() {
    // Rule 15: the answer is the whole quantity, never its last number.
    for (t, want, first, last) in [
        (
            "The answer is 7 hours 30 minutes.",
            "7 hours 30 minutes",
            (15, 2),
            (450, 1),
        ),
        ("It is 2 feet 6 inches.", "2 feet 6 inches", (5, 2), (30, 1)),
        ("\\boxed{3 m 20 cm}", "3 m 20 cm", (16, 5), (320, 1)),
        ("It takes 1 h 15 min.", "1 h 15 min", (5, 4), (75, 1)),
        ("#### 5 lb 3 oz", "5 lb 3 oz", (83, 16), (83, 1)),
        (
            "It is 3 gallons 2 quarts.",
            "3 gallons 2 quarts",
            (7, 2),
            (14, 1),
        ),
        ("It is 30\u{b0} 15'.", "30\u{b0} 15'", (121, 4), (1815, 1)),
        ("It is 2 ft. 6 in.", "2 ft. 6 in", (5, 2), (30, 1)),
        (
            "It costs $5 and 25 cents.",
            "5 and 25 cents",
            (21, 4),
            (525, 1),
        ),
        (
            "So 2 years and 3 months.",
            "2 years and 3 months",
            (9, 4),
            (27, 1),
        ),
    ] {
        let e = extract_answer(t, &ExtractOptions::default()).expect(t);
        assert_eq!(e.parts, vec![want], "{t}");
        let q = e.quantity.expect(t);
        assert_eq!((q.in_first, q.in_last), (Some(first), Some(last)), "{t}");
    }
    // One unit, or a compound that is not the answer: a value as before.
    for (t, want) in [
        ("The answer is 30 minutes.", "30 minutes"),
        (
            "He walked 2 hours and 30 minutes, so he covered 10 km.",
            "10",
        ),
        ("It takes 7 hours and \\boxed{30} minutes.", "30"),
    ] {
        let e = extract_answer(t, &ExtractOptions::default()).expect(t);
        assert_eq!((e.parts, e.quantity), (vec![want], None), "{t}");
    }
    assert_eq!(whole_quantity("7 hours 30 minutes"), Some((15, 2)));
    assert_eq!(whole_quantity("about 7 hours 30 minutes"), None);
    assert_eq!(whole_quantity("7 hours"), None);
}

proptest::proptest! {
    /// A short gold is its own answer without its markers being looked
    /// for: the same extraction as looking for them, on the short forms
    /// (with spaces around them) and near misses of them.
    #[test]
    fn a_short_gold_is_extracted_as_its_markers_would_be(
        a in "[0-9]{1,6}",
        b in "[0-9]{1,6}",
        pad in "[ \t\n]{0,2}",
        near in r"[0-9{}\\fracdtpiboxed#:<>|()\[\], leftrigh-]{0,20}",
    ) {
        let o = ExtractOptions::default();
        for form in [
            a.clone(),
            format!("{a}.{b}"),
            format!("\\frac{{{a}}}{{{b}}}"),
            format!("\\dfrac{{{a}\\pi}}{{{b}}}"),
            format!("{a}\\sqrt{{{b}}}"),
            format!("({a}, {b})"),
            format!("\\left[{a},{b}\\right)"),
            near.clone(),
            format!("\\boxed{{{a}}}"),
            format!("{a}<|im_end|>"),
        ] {
            let text = format!("{pad}{form}{pad}");
            proptest::prop_assert_eq!(extract_gold(&text, &o), marked_gold(&text, &o), "{:?}", text);
        }
    }
}
