"""Answer markers and hedge words in other languages (issue 31, class 8).

docs/verify_semantics.md rule 13: `Antwort:`, `la réponse est`, `Respuesta:`,
`la risposta è`, `a resposta é`, `Ответ:`, `答案是`, `答えは` mark the answer
as `Answer:` and `the answer is` do; `oder`, `o`, `или`, `或`, `还是`, `か`
offer alternatives, `可能`, `たぶん`, `かもしれない` doubt, `不是`, `ではない`
negate; letters of other scripts next to a number are words, not variables
(`5个苹果` is 5). Written by hand, as models write them; the expected reading
is a careful human grader's. Every case goes through every entry point a
trainer calls (tests/entry_points.py).
"""

from __future__ import annotations

import time

import pytest
from entry_points import assert_not_paid, assert_paid, cases, each_entry_point

import grpo_fast

# A committed answer under a foreign marker pays (the gold is right).
MARKED = [
    ("5", "Also ist die Antwort: 5"),
    ("5", "Die Antwort ist 5."),
    ("5", "Die Antwort lautet 5."),
    ("5", "Donc la réponse est 5."),
    ("5", "Réponse : 5"),
    ("5", "La respuesta es 5."),
    ("5", "Respuesta: 5"),
    ("5", "Quindi la risposta è 5."),
    ("5", "Risposta: 5"),
    ("5", "Portanto, a resposta é 5."),
    ("5", "Resposta: 5"),
    ("5", "Ответ: 5"),
    ("5", "ответ: 5 рублей"),
    ("5", "Итак, ответ равен 5."),
    ("5", "答案：5"),
    ("5", "答案是5。"),
    ("5", "所以答案为5。"),
    ("5", "所以答案是5个苹果。"),
    ("5", "答えは5です。"),
    ("5", "答え：5円"),
    ("5", "答案是５。"),
    ("5", "答案：５"),
    ("12", "先算 3 × 4。答案是12。"),
    ("3/4", "Die Antwort ist $\\frac{3}{4}$."),
    # `答：` (Chinese and Japanese worked solutions) and its English `Ans:`.
    ("5", "答：5"),
    ("5", "答: 5"),
    ("5", "答：5个苹果。"),
    ("5", "Ans: 5"),
    # Italian `non` before a value negates it; a negation elsewhere in the
    # text is not the answer's.
    ("5", "La risposta è 5, non 6."),
    ("5", "No es fácil: la respuesta es 5."),
    ("5", "Non è difficile. La risposta è 5."),
    ("5", "Ce n'est pas facile. La réponse est 5."),
]

# The marker wins over a later number in prose (it is a marker, not prose).
MARKER_WINS = [
    ("5", "Ответ: 5. Проверка: 2 + 3 = 5, всего 7 шагов"),
    ("5", "答案是5。我们用了3步。"),
    ("5", "Antwort: 5. Wir brauchten 3 Schritte."),
    ("5", "答：5个苹果。\n检验：5×2=10"),
]

# A foreign number with a word of another script after it is that number.
NON_LATIN_WORDS = [
    ("5", "Всего ответ 5 рублей"),
    ("5", "一共有5个苹果"),
    ("5", "全部で5円"),
    ("5", "So he pays 5 рублей"),
    # A short line of foreign words before the number is prose, not a product
    # of variables (`Итого: 5` is no `И*т*о*г*о/5`).
    ("5", "Итого: 5"),
    ("5", "Итак, 5."),
    ("5", "Résultat : 5"),
    ("5", "合計: 5"),
]

# A hedged, doubted or negated answer under a foreign marker pays nothing.
HEDGED = [
    ("5", "Die Antwort ist 5 oder 6."),
    ("5", "Die Antwort ist nicht 5."),
    ("5", "Réponse : 5 ou 6"),
    ("5", "La respuesta es 5 o 6."),
    ("6", "La respuesta es 5 o 6."),
    ("5", "La risposta è 5 o 6."),
    ("5", "A resposta é 5 ou 6."),
    ("5", "Ответ: 5 или 6"),
    ("5", "Ответ: не 5"),
    ("5", "Ответ: возможно 5"),
    ("5", "答案是5或6。"),
    ("6", "答案是5或6。"),
    ("5", "答案是5或者6"),
    ("5", "答案是5还是6"),
    ("5", "答案可能是5"),
    ("5", "答案也许是5。"),
    ("5", "答案大概是5。"),
    ("5", "答案不是5。"),
    ("5", "答えは5か6です。"),
    ("5", "答えは5または6です。"),
    ("5", "答えは5かもしれない。"),
    ("5", "答えはたぶん5です。"),
    ("5", "答えは5ではない。"),
    ("5", "答えは5じゃない。"),
    ("5", "答案是5？"),
    # A negated marker: `the answer is not 5`.
    ("5", "La respuesta no es 5."),
    ("5", "La risposta non è 5."),
    ("5", "A resposta não é 5."),
    ("5", "La réponse n'est pas 5."),
    ("5", "La risposta è non 5."),
    # Doubt in two words or a hyphen, and the conditional modals (`could`).
    ("5", "Peut-être 5."),
    ("5", "La réponse est peut-être 5."),
    ("5", "Tal vez 5."),
    ("5", "Может быть, 5."),
    ("5", "Es könnte 5 sein."),
    ("5", "Il pourrait être 5."),
    ("5", "Podría ser 5."),
    ("5", "Potrebbe essere 5."),
    ("5", "Poderia ser 5."),
]

# The value after Italian `non` is denied; Spanish `no` alone is not read
# (`5, no 6` is `5, not 6` in Spanish and a correction in English): such an
# answer pays nothing, the error toward paying nothing.
DENIED = [
    ("6", "La risposta è 5, non 6."),
    ("5", "La respuesta es 5, no 6."),
    ("6", "La respuesta es 5, no 6."),
]

NOT_PAID = HEDGED + DENIED
PAID = MARKED + MARKER_WINS + NON_LATIN_WORDS


@each_entry_point
@cases(NOT_PAID)
def test_not_paid(entry, gold, completion):
    assert_not_paid(entry, gold, completion)


@each_entry_point
@cases(PAID)
def test_paid(entry, gold, completion, request):
    assert_paid(entry, gold, completion, request)


@pytest.mark.parametrize(("gold", "completion"), MARKED[:16], ids=[p for _, p in MARKED[:16]])
def test_a_wrong_answer_under_a_foreign_marker_pays_nothing(gold, completion):
    # The marker is read, not the text around it: another gold fails.
    assert not grpo_fast.verify("7", completion)


@pytest.mark.parametrize(("gold", "completion"), HEDGED, ids=[p for _, p in HEDGED])
def test_the_verdict_names_the_hedge(gold, completion):
    v = grpo_fast.verify_detailed(gold, completion)
    assert not v.matched
    assert v.reason.startswith("hedge: "), v


def test_foreign_markers_are_markers():
    for completion in [
        "Antwort: 5",
        "Respuesta: 5",
        "Ответ: 5",
        "答案：5",
        "答え：5",
        "答：5",
        "Ans: 5",
    ]:
        found = grpo_fast.extract_answer(completion)
        assert found is not None and found.rule == "answer_colon", completion
        assert found.answer == "5", completion
    for completion in ["Die Antwort ist 5", "la réponse est 5", "答案是5", "答えは5"]:
        found = grpo_fast.extract_answer(completion)
        assert found is not None and found.rule == "answer_is", completion
        assert found.answer == "5", completion


def test_ans_is_a_marker_only_as_a_word():
    # `plans:` and `Trans:` end in `ans:`: words, not markers.
    for completion in ["The plans: 5", "Trans: 5"]:
        found = grpo_fast.extract_answer(completion)
        assert found is not None and found.rule != "answer_colon", completion
    assert grpo_fast.verify("7", "Trans: 5. Answer: 7")


def test_words_in_latin_prose_are_not_folded():
    # `не` and `или` are words only alone; `o` is a word only between values.
    assert grpo_fast.verify("5", "Ответ: 5 недель")
    assert grpo_fast.verify("x", "The answer is $x$")
    assert grpo_fast.verify("5", "So o = 5")


def test_long_runs_of_cjk_and_cyrillic_end_in_bounded_time():
    for text in [
        "答案是" * 80_000 + "5",
        "或" * 80_000 + "5",
        "5个" * 80_000,
        "ответ " * 40_000 + "5",
        "か5" * 60_000,
        "答えは５。" * 40_000,
    ]:
        start = time.perf_counter()
        grpo_fast.verify_detailed("5", text[:80_000])  # under 256 KiB: read
        assert time.perf_counter() - start < 10, text[:20]
