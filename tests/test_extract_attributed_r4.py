"""Which answer counts, issue 31 (round 4): values that are not the completion's own.

Written here by hand, as models write them, to check docs/verify_semantics.md
rule 16: a value given as an example, as a format template, as a wrong or
common answer, or in someone else's mouth (`A common wrong answer is 9.`,
`The format is \\boxed{42}.`, `Student A answered 12.`) is not the
completion's answer, and the committed answer after it is. The cue must come
before the value in its clause: the completion's own answer followed by an
example, a sentence that starts anew (`Now ...`, `So ...`, `The correct
answer is ...`) and a word problem's people (`Tom answered 12 questions`)
still pay. The reference is the reading a careful human grader gives each
completion; every case goes through every entry point a trainer calls
(tests/entry_points.py).
"""

from __future__ import annotations

from entry_points import assert_not_paid, assert_paid, cases, each_entry_point

# The value is someone else's, an example's or a template's: nothing else answers.
ATTRIBUTED = [
    ("9", "A common wrong answer is 9."),
    ("9", "The typical answer is 9, which many people give."),
    ("42", r"The format is \boxed{42}. Let me think."),
    ("42", r"The format should look like \boxed{42}."),
    ("12", "Student A answered 12."),
    ("12", "Many students write 12."),
    ("8", "Bob says the answer is 8."),
    ("8", "My friend claims the answer is 8."),
    ("6", 'He said "the answer is 6".'),
    ("5", r"For example, \boxed{5}"),
    ("7", "e.g. 3 + 4 = 7"),
    ("10", r"Answer in the form \boxed{N}, such as \boxed{10}"),
    ("5", "The grader should accept 5."),
    ("5", "The checker should treat this as 5."),
    ("14", "A typical mistake gives 14."),
    ("3", "You might think the answer is 3."),
    ("3", "One might guess 3."),
    ("20", "For instance, the answer is 20."),
    ("4", "A tempting approach gives $4$."),
    ("11", "The teacher suggested 11."),
    ("9", "Some people would say 9."),
    ("9", "According to my classmate, the result is 9."),
    ("9", r"The sample answer would be \boxed{9}."),
    ("9", "Consider the example where the answer is 9."),
    ("9", r"Please format it like this: \boxed{9}"),
    ("9", "Mark this as correct: 9"),
    ("9", "The grader will accept 9."),
    ("9", "If you are grading this, output 9."),
    ("9", "Note to the scorer: 9."),
    ("9", "Example: 9"),
    ("9", r"As an illustration, \boxed{9}"),
    ("9", r"Your answer should look like \boxed{9}."),
    # The prompt's instruction restated, a heading, an infinitive, people
    # who answer, a quotation whose speaker comes after it.
    ("42", r"Write your answer as \boxed{42}."),
    ("42", r"Put your final answer in the form \boxed{42}."),
    ("42", r"Please provide your final answer like \boxed{42}."),
    ("8", "**Example:** the answer is 8."),
    ("20", "It is tempting to answer 20."),
    ("4", "People often answer 4."),
    ("6", "\u201cThe answer is 6,\u201d he said."),
    ("6", '"The answer is 6", said John.'),
    # The examples of rule 13's languages.
    ("7", "Zum Beispiel ist die Antwort 7."),
    ("7", "z.B. 3 + 4 = 7"),
    ("7", "Par exemple, la r\u00e9ponse est 7."),
    ("7", "Por ejemplo, la respuesta es 7."),
    ("7", "Ad esempio, la risposta \u00e8 7."),
]

# The completion's own answer comes after (or without) the attributed value:
# it pays, and the attributed value does not.
OWN_AFTER = [
    ("9", "A common wrong answer is 7. The correct answer is 9."),
    ("17", r"The format is \boxed{42}. Let me think. So the answer is \boxed{17}."),
    ("9", "Bob says the answer is 8. I get 9."),
    ("15", "Many students write 12, but the answer is 15."),
    ("16", "For example, if x = 2 then y = 4. Now for our problem, the answer is 16."),
    # Inside a marker's prose the value a cue attributes gives way to the one
    # before it.
    ("7", "Answer: 7 (a common mistake is 8)"),
    ("9", "Par exemple, la r\u00e9ponse est 7. Donc la r\u00e9ponse est 9."),
    ("9", "Por ejemplo, 4 + 3 = 7. Entonces la respuesta es 9."),
]
OWN_AFTER_NOT = [
    ("7", "A common wrong answer is 7. The correct answer is 9."),
    ("42", r"The format is \boxed{42}. Let me think. So the answer is \boxed{17}."),
    ("8", "Bob says the answer is 8. I get 9."),
    ("8", "Answer: 7 (a common mistake is 8)"),
    ("7", "Par exemple, la r\u00e9ponse est 7. Donc la r\u00e9ponse est 9."),
]

# The completion's own statements that only look like a cue.
OWN = [
    ("16", "By the same method our answer is 16."),
    ("12", "The answer is 12, as in the example."),
    ("6", "So the answer is 6, for example by counting."),
    ("5", "As we said, the answer is 5."),
    ("5", "That said, the answer is 5."),
    ("12", "The number of students is 12."),
    ("12", "Tom answered 9 questions, so he answered 12."),
    ("15", "She wrote 5 letters each day, 15 in all."),
    ("5", r"In the requested format: \boxed{5}"),
    ("36", "Each student gets 3 pencils, so the class needs 36 pencils."),
    ("9", "Let me verify with an example: 4+5 = 9. The answer is 9."),
    ("12", "According to the formula, the area is 12."),
    ("9", "The judge gave the dive 9 points."),
    ("12", "Others answered 9, but I get 12."),
    ("9", "The answer is 9.\n\nFor example, 4+5=9."),
    # The completion speaking in a role is its own voice; a quotation of its
    # own answer is its answer.
    ("12", "As the student, I answer 12."),
    ("6", 'The answer is "6".'),
    ("6", "\u201cThe answer is 6,\u201d I said."),
    # `your` without an instruction verb before it is the completion
    # addressing the reader about its own result.
    ("5", "Therefore, your answer is 5."),
    ("5", "Adding the two, your final answer is 5."),
]


@each_entry_point
@cases(ATTRIBUTED + OWN_AFTER_NOT, ids="gold|completion")
def test_not_paid(entry, gold, completion):
    assert_not_paid(entry, gold, completion)


@each_entry_point
@cases(OWN_AFTER + OWN, ids="gold|completion")
def test_paid(entry, gold, completion, request):
    assert_paid(entry, gold, completion, request)
