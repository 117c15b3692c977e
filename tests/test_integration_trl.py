"""grpo_fast.integrations.trl against TRL's own reward functions, and inside TRL's GRPOTrainer."""

from __future__ import annotations

import math
import pickle
import random
from concurrent.futures import ThreadPoolExecutor

import pytest

trl = pytest.importorskip("trl")
pytest.importorskip("math_verify")

from trl.rewards import accuracy_reward as trl_accuracy_reward  # noqa: E402
from trl.rewards import get_cosine_scaled_reward as trl_cosine  # noqa: E402
from trl.rewards import get_repetition_penalty_reward as trl_repetition  # noqa: E402
from trl.rewards import get_soft_overlong_punishment as trl_soft_overlong  # noqa: E402
from trl.rewards import reasoning_accuracy_reward as trl_reasoning_accuracy_reward  # noqa: E402
from trl.rewards import think_format_reward as trl_think_format_reward  # noqa: E402

from grpo_fast import rewards  # noqa: E402
from grpo_fast.errors import InvalidInputError  # noqa: E402
from grpo_fast.integrations import trl as gf  # noqa: E402


def chat(texts):
    return [[{"role": "assistant", "content": t}] for t in texts]


# (completion, solution) pairs on which TRL's accuracy_reward and ours must agree:
# anchored answers of the kinds math datasets hold, right and wrong.
AGREE = [
    (r"My answer is \boxed{\frac{1}{3}}", r"\frac{1}{3}"),
    (r"My answer is \boxed{\frac{1}{2}}", r"\frac{1}{3}"),
    (r"so \boxed{0.5}", r"$\frac{1}{2}$"),
    (r"so \boxed{\dfrac{2}{4}}.", r"$\frac12$"),
    (r"We get $x = 3$, hence \boxed{3}", "$3$"),
    (r"hence \boxed{4}", "$3$"),
    (r"\boxed{2\sqrt{2}}", r"$\sqrt{8}$"),
    (r"\boxed{\sqrt{3}}", r"$\sqrt{2}$"),
    (r"The final answer is $\frac{3}{4}$.", r"$\frac34$"),
    (r"The final answer is $7$.", "$8$"),
    (r"Thus the answer is \boxed{(1, 2)}", r"$(1,2)$"),
    (r"Thus the answer is \boxed{(2, 1)}", r"$(1,2)$"),
    (r"\boxed{1,080}", "$1080$"),
    (r"The total is \boxed{12}", "12"),
    (r"The total is \boxed{13}", "12"),
    (r"\boxed{\pi}", r"$\pi$"),
    (r"\boxed{x^2 + 2x + 1}", r"$(x+1)^2$"),
    ("no anchor here, just 42", "$42$"),
    ("", "$5$"),
    (r"\boxed{-7}", "$-7$"),
    (r"\boxed{10\%}", r"$10\%$"),
    (r"Answer: $\frac{5}{6}$", r"$\frac56$"),
]


def test_accuracy_reward_agrees_with_trl_plain_and_chat():
    completions = [c for c, _ in AGREE]
    solution = [s for _, s in AGREE]
    theirs = trl_accuracy_reward(chat(completions), solution)
    assert gf.accuracy_reward(chat(completions), solution=solution) == theirs
    assert gf.accuracy_reward(completions, solution=solution) == theirs
    assert 0 < sum(theirs) < len(theirs)  # the cases are not all one-sided


def test_accuracy_reward_none_for_unusable_gold_like_trl():
    completions = chat([r"\boxed{1}", r"\boxed{1}"])
    solution = ["", r"$1$"]
    theirs = trl_accuracy_reward(completions, solution)
    assert theirs == [None, 1.0]
    assert gf.accuracy_reward(completions, solution=solution) == theirs


def test_accuracy_reward_is_a_drop_in_for_the_trainer_signature():
    seen = {}
    gf.accuracy_reward(
        chat([r"\boxed{2}"]),
        solution=["$2$"],
        prompts=["1+1?"],
        completion_ids=[[1, 2]],
        trainer_state=None,
        log_extra=lambda k, v: seen.__setitem__(k, v),
        log_metric=lambda k, v: None,
        some_other_column=[3],
    )
    assert seen == {"solution": ["$2$"]}
    assert gf.accuracy_reward.__name__ == "accuracy_reward"


def test_every_call_form_of_trl_and_its_trainer():
    """Positional as TRL's docs and tests call it, keywords as GRPOTrainer does, with the
    trainer's extra keywords and dataset columns, plain and conversational completions."""
    texts = [r"so \boxed{\frac{1}{3}}", r"so \boxed{\frac{1}{2}}"]
    solution = [r"\frac{1}{3}", r"\frac{1}{3}"]
    want = trl_accuracy_reward(chat(texts), solution)
    assert want == [1.0, 0.0]
    logged = {}
    trainer_kwargs = {
        "prompts": [[{"role": "user", "content": "1/3?"}]] * 2,
        "completion_ids": [[5, 6], [7]],
        "trainer_state": object(),
        "log_extra": logged.__setitem__,
        "log_metric": lambda name, value: None,
        "environments": None,
        "difficulty": ["easy", "hard"],
    }
    assert gf.accuracy_reward(chat(texts), solution) == want
    assert gf.accuracy_reward(texts, solution) == want
    assert gf.accuracy_reward(chat(texts), solution, logged.__setitem__) == want
    assert logged == {"solution": solution}
    assert gf.accuracy_reward(completions=chat(texts), solution=solution, **trainer_kwargs) == want
    assert (
        gf.reasoning_accuracy_reward(
            chat([f"<think>x</think>{t}" for t in texts]), solution, ["</think>"]
        )
        == want
    )
    # Functions of the token ids take them first, as TRL's do; completions by keyword are
    # accepted and not read (and the older call, completions first, still binds).
    ids = [[1] * 90, [1] * 10]
    overlong = gf.get_soft_overlong_punishment(100, 20)
    assert overlong(ids) == [-0.5, 0.0] == trl_soft_overlong(100, 20)(ids)
    assert overlong(completions=chat(texts), completion_ids=ids) == [-0.5, 0.0]
    assert overlong(chat(texts), completion_ids=ids) == [-0.5, 0.0]
    cosine = gf.get_cosine_scaled_reward(100)
    assert cosine(chat(texts), solution, ids) == pytest.approx(
        trl_cosine(100)(chat(texts), solution, ids)
    )
    mixed = dict(trainer_kwargs, completion_ids=ids)
    assert cosine(completions=chat(texts), solution=solution, **mixed) == pytest.approx(
        trl_cosine(100)(completions=chat(texts), solution=solution, **mixed)
    )


@pytest.mark.parametrize(
    "gold",
    [
        "forty two",
        "Answer is forty two.",
        "New York",
        "yes",
        "",
        "no answer here",
        "$3$",
        "7",
    ],
)
def test_a_gold_without_a_math_value_is_none_like_trl(gold):
    completions = chat([r"\boxed{3}", r"\boxed{7}", "The answer is forty two."])
    solution = [gold] * 3
    theirs = trl_accuracy_reward(completions, solution)
    assert gf.accuracy_reward(completions, solution) == theirs
    ids = [[1] * 10] * 3
    ours = gf.get_cosine_scaled_reward(20)(completions, solution, ids)
    assert [x is None for x in ours] == [x is None for x in theirs]


def _random_answers(rng, n):
    pool = [r"\boxed{\frac{1}{3}}", r"\boxed{0.5}", r"\boxed{2}", "no answer", r"\boxed{3}"]
    return [rng.choice(pool) for _ in range(n)]


@pytest.mark.parametrize("max_len", [1, 7, 100])
def test_cosine_scaled_reward_agrees_with_trl(max_len):
    rng = random.Random(max_len)
    texts = _random_answers(rng, 200)
    # Golds both parse (TRL reads a bare `\frac12` as no gold; grpo-fast reads it).
    solution = [rng.choice([r"\frac{1}{3}", "2", r"$\frac12$"]) for _ in texts]
    ids = [[1] * rng.randrange(0, 3 * max_len + 2) for _ in texts]
    bounds = {"min_value_wrong": -2.0, "max_value_wrong": -0.1, "min_value_correct": 0.2}
    for kwargs in ({}, bounds):
        theirs = trl_cosine(max_len, **kwargs)(chat(texts), solution, ids)
        ours = gf.get_cosine_scaled_reward(max_len, **kwargs)(chat(texts), solution, ids)
        assert ours == pytest.approx(theirs, abs=1e-6)
    assert len(set(theirs)) > 3


@pytest.mark.parametrize("ngram_size", [1, 2, 3, 5])
def test_repetition_penalty_reward_agrees_with_trl(ngram_size):
    rng = random.Random(ngram_size)
    ids = [
        [rng.randrange(0, rng.choice([2, 5, 1000])) for _ in range(rng.randrange(0, 40))]
        for _ in range(300)
    ]
    for penalty in (0.0, -0.25, -1.0):
        theirs = trl_repetition(ngram_size, penalty)(ids)
        ours = gf.get_repetition_penalty_reward(ngram_size, penalty)(ids)
        assert ours == pytest.approx(theirs, abs=1e-6)
    assert len(set(theirs)) > 3


def test_reasoning_accuracy_reward_agrees_with_trl():
    texts = [f"<think>I guess \\boxed{{0}} first</think> {c}" for c, _ in AGREE]
    texts += [
        r"<think>\boxed{3} but never done",
        r"no think \boxed{3}",
        r"a</think>b</think>\boxed{3}",
    ]
    texts += [r"<think>x</answer> \boxed{3}", r"<think>x</think> \boxed{3}"]
    solution = [s for _, s in AGREE] + ["$3$"] * 5
    solution[-1] = ""  # unusable gold after finished reasoning: None
    for delims in (None, ["</answer>", "</think>"]):
        theirs = trl_reasoning_accuracy_reward(chat(texts), solution, reasoning_delimiters=delims)
        ours = gf.reasoning_accuracy_reward(
            chat(texts), solution=solution, reasoning_delimiters=delims
        )
        assert ours == theirs
        if delims is None:
            assert gf.get_reasoning_accuracy_reward()(chat(texts), solution=solution) == theirs
    assert 0 < sum(x or 0 for x in theirs) < len(theirs) and None in theirs


def test_accuracy_reward_can_log_extracted_answers():
    logged = {}
    reward = gf.get_accuracy_reward(log_answers=True)
    reward(
        chat([r"so \boxed{\frac{1}{2}}", "no anchor 3"]),
        solution=["$0.5$", "$3$"],
        log_extra=logged.__setitem__,
    )
    assert logged == {
        "solution": ["$0.5$", "$3$"],
        "answer_parsed": ["\\frac{1}{2}", "[unparseable]"],
    }


def test_think_format_reward_agrees_with_trl():
    rng = random.Random(0)
    pieces = ["<think>", "</think>", "a", "\n", " ", "<answer>", "x"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randrange(0, 7))) for _ in range(2000)]
    texts += ["<think>\nreason\n</think>\nanswer", "<think>a<think>b</think>", "x<think></think>"]
    theirs = trl_think_format_reward(chat(texts))
    assert gf.think_format_reward(chat(texts)) == theirs
    assert 0 < sum(theirs) < len(theirs)


@pytest.mark.parametrize("max_len,cache", [(100, 20), (16, 0), (16, 16), (5, 1)])
def test_soft_overlong_punishment_agrees_with_trl(max_len, cache):
    rng = random.Random(max_len * 31 + cache)
    ids = [[1] * rng.randrange(0, 2 * max_len + 2) for _ in range(500)]
    ids += [[1] * n for n in (max_len - cache, max_len - cache + 1, max_len, max_len + 1)]
    theirs = trl_soft_overlong(max_len, cache)(completion_ids=ids)
    ours = gf.get_soft_overlong_punishment(max_len, cache)(
        completions=[""] * len(ids), completion_ids=ids
    )
    assert len(ours) == len(theirs)
    assert all(
        math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6) for a, b in zip(ours, theirs, strict=True)
    )


def test_format_reward_matches_python_re():
    import re

    pattern = r"^<think>.*?</think>\s*<answer>.*?</answer>$"
    texts = [
        "<think>\nx\n</think>\n<answer>4</answer>",
        "<think>x</think><answer>4</answer> trailing",
        "<answer>4</answer>",
        "<think></think> <answer></answer>",
    ]
    reference = [1.0 if re.match(pattern, t, re.DOTALL) else 0.0 for t in texts]
    assert gf.get_format_reward(pattern)(chat(texts)) == reference
    assert reference == [1.0, 0.0, 0.0, 1.0]


def test_as_trl_reward_weights_and_lengths():
    reward = gf.as_trl_reward(
        [rewards.MathReward(), rewards.OverlongReward(8, 4, weight=0.5)], name="mine"
    )
    out = reward(
        ["#### 4", "#### 5", "#### 4"],
        solution=["4", "4", "4"],
        completion_ids=[[1] * 6, [1] * 2, [1] * 9],
    )
    # 1 + 0.5 * (4 - 6) / 4, 0 + 0, 1 + 0.5 * -1
    assert out == [0.75, 0.0, 0.5]
    assert reward.__name__ == "mine"


def test_pickle_round_trip_keeps_behaviour():
    texts = chat([r"\boxed{3}", r"\boxed{4}"])
    ids = [[1] * 3, [1] * 5]
    for fn, kwargs in [
        (gf.accuracy_reward, {"solution": ["3", "3"]}),
        (gf.think_format_reward, {}),
        (gf.get_soft_overlong_punishment(4, 2), {"completion_ids": ids}),
        (gf.get_cosine_scaled_reward(4), {"solution": ["3", "3"], "completion_ids": ids}),
        (gf.get_repetition_penalty_reward(1), {"completion_ids": ids}),
    ]:
        clone = pickle.loads(pickle.dumps(fn))
        assert clone(completions=texts, **kwargs) == fn(completions=texts, **kwargs)
        assert clone.__name__ == fn.__name__


def test_works_from_threads():
    """TRL's own reward must switch math-verify's signal timeouts off in threads; ours has none."""
    completions = chat([c for c, _ in AGREE])
    solution = [s for _, s in AGREE]
    expected = gf.accuracy_reward(completions, solution=solution)
    with ThreadPoolExecutor(4) as pool:
        outs = list(
            pool.map(lambda _: gf.accuracy_reward(completions, solution=solution), range(8))
        )
    assert all(o == expected for o in outs)


def test_bad_input_is_a_clear_error():
    with pytest.raises(InvalidInputError, match="'solution'"):
        gf.accuracy_reward(chat(["x"]))
    with pytest.raises(InvalidInputError, match="solution has 2 entries but there are 1"):
        gf.accuracy_reward(chat(["x"]), solution=["1", "2"])
    with pytest.raises(InvalidInputError, match="completion_ids \\(the token ids"):
        gf.get_soft_overlong_punishment(4, 2)(completions=["x"])
    with pytest.raises(InvalidInputError, match=r"completion_ids\[0\] is str"):
        gf.get_soft_overlong_punishment(4, 2)(["x"])
    with pytest.raises(InvalidInputError, match="both by position and by keyword"):
        gf.accuracy_reward(chat(["x"]), ["1"], solution=["1"])
    with pytest.raises(InvalidInputError, match="at most 3 positional"):
        gf.accuracy_reward(chat(["x"]), ["1"], None, 4)
    with pytest.raises(InvalidInputError, match="needs the completions"):
        gf.accuracy_reward(solution=["1"])
    with pytest.raises(InvalidInputError, match="max_penalty"):
        gf.get_repetition_penalty_reward(3, 0.5)
    with pytest.raises(InvalidInputError, match="completions\\[0\\] is int"):
        gf.accuracy_reward([3], solution=["3"])
    with pytest.raises(InvalidInputError, match="soft_punish_cache"):
        gf.get_soft_overlong_punishment(4, 8)


# --- The real GRPOTrainer, on the CPU, with a tiny model built here -------------------------

WORDS = [
    "<pad>", "<eos>", "What", "is", "one", "plus", "two", "half", "?",
    "\\boxed{2}", "\\boxed{3}", "\\boxed{\\frac{1}{2}}", "0.5", "<think>", "</think>",
]  # fmt: skip


def _tiny_model(path):
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    tok = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(WORDS)}, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
    tokenizer.save_pretrained(path)
    config = Qwen2Config(
        vocab_size=len(WORDS), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
        pad_token_id=0, eos_token_id=1, bos_token_id=1,
    )  # fmt: skip
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config)
    with torch.no_grad():  # uniform next-token distribution: every word gets sampled
        model.model.norm.weight.zero_()
    model.save_pretrained(path)
    return tokenizer


class Recorder:
    """Passes a reward function through, keeping what the trainer gave it and what it returned."""

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__
        self.calls = []

    def __call__(self, completions, **kwargs):
        out = self.fn(completions=completions, **kwargs)
        self.calls.append((completions, kwargs.get("solution"), kwargs.get("completion_ids"), out))
        return out


def _nanmean(xs):
    vals = [x for x in xs if x is not None]
    return sum(vals) / len(vals)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning")
def test_grpo_trainer_runs_with_our_rewards(tmp_path):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    tokenizer = _tiny_model(tmp_path / "model")
    prompts = [
        "What is one plus one ?",
        "What is two ?",
        "What is half ?",
        "What is one plus two ?",
    ]
    dataset = Dataset.from_dict(
        {
            "prompt": [[{"role": "user", "content": p}] for p in prompts],
            "solution": ["$2$", "$2$", r"$\frac{1}{2}$", "$3$"],
        }
    )
    acc = Recorder(gf.accuracy_reward)
    fmt = Recorder(gf.think_format_reward)
    overlong = Recorder(gf.get_soft_overlong_punishment(max_completion_len=4, soft_punish_cache=2))
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=3,
        max_steps=3,
        logging_steps=1,
        learning_rate=1e-2,
        seed=0,
        use_cpu=True,
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
        activation_checkpointing=False,
    )
    trainer = GRPOTrainer(
        model=str(tmp_path / "model"),
        reward_funcs=[acc, fmt, overlong],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    trainer.train()

    logs = [h for h in trainer.state.log_history if "rewards/accuracy_reward/mean" in h]
    assert len(logs) == 3 == len(acc.calls) == len(fmt.calls) == len(overlong.calls)
    for log, a, f, o in zip(logs, acc.calls, fmt.calls, overlong.calls, strict=True):
        completions, solution, ids, out = a
        assert isinstance(completions[0], list) and completions[0][0]["role"] == "assistant"
        assert len(out) == 8
        # What our functions returned is what the trainer logged ...
        assert log["rewards/accuracy_reward/mean"] == pytest.approx(_nanmean(out))
        assert log["rewards/think_format_reward/mean"] == pytest.approx(_nanmean(f[3]))
        assert log["rewards/soft_overlong_punishment_reward/mean"] == pytest.approx(_nanmean(o[3]))
        # ... and agrees with TRL's own functions on the same completions (for accuracy, where
        # the completion holds a single box: several boxes are one collection answer for us).
        theirs = trl_accuracy_reward(completions, solution)
        single = [c[0]["content"].count("\\boxed") <= 1 for c in completions]
        ours_single = [x for x, s in zip(out, single, strict=True) if s]
        assert ours_single == [x for x, s in zip(theirs, single, strict=True) if s]
        assert f[3] == trl_think_format_reward(f[0])
        assert o[3] == trl_soft_overlong(4, 2)(completion_ids=o[2])
    all_acc = [x for call in acc.calls for x in call[3]]
    assert 0.0 in all_acc and 1.0 in all_acc  # the tiny model's samples hit and miss
