"""grpo_fast.integrations.openrlhf: the reward_func module, through OpenRLHF's own code.

OpenRLHF 0.11.2 is installed with --no-deps (requirements/no-deps.txt): its
``SingleTurnAgentExecutor`` loads the file given as the remote reward URL and calls
``reward_func`` per sample, and its ``SamplesGenerator`` turns the result into an
``Experience``. vLLM, DeepSpeed and flash-attn cannot be installed here: the only
stand-ins are for vLLM (the engine that generates, its ``SamplingParams``, and the
``vllm`` module that ``samples_generator`` imports); DeepSpeed and flash-attn are not
imported on these paths. Correctness is checked against math-verify.
"""

from __future__ import annotations

import importlib.util
import re

import pytest

torch = pytest.importorskip("torch")
math_verify = pytest.importorskip("math_verify")

from grpo_fast import rewards  # noqa: E402
from grpo_fast.errors import InvalidInputError  # noqa: E402
from grpo_fast.integrations import openrlhf as gf  # noqa: E402


def load_like_openrlhf():
    """openrlhf: spec_from_file_location(--remote_rm_url) + exec_module, then .reward_func."""
    spec = importlib.util.spec_from_file_location("reward_func", gf.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.reward_func


PROMPT = "Solve. Example: 3 + 4 = ?\n#### 7\nNow: 4 + 5 = ?\n"
CASES = [  # (response, label): answers as a policy writes them
    (r"We add: 4 + 5 = 9, so the answer is \boxed{9}.", "9"),
    (r"so \boxed{\frac{1}{2}}", r"\frac12"),
    (r"so \boxed{0.5}", r"\frac{1}{2}"),
    (r"so \boxed{\frac{1}{3}}", r"\frac{1}{2}"),
    (r"I get \boxed{2\sqrt{2}}", r"\sqrt{8}"),
    (r"the result is \boxed{(1, 2)}", "(1,2)"),
    (r"the result is \boxed{(2, 1)}", "(1,2)"),
    (r"hence \boxed{-3}", "3"),
]


def test_reward_func_contract_and_agreement_with_math_verify():
    reward_func = load_like_openrlhf()
    responses = [r for r, _ in CASES]
    labels = [g for _, g in CASES]
    out = reward_func([PROMPT + r for r in responses], [PROMPT] * len(CASES), labels)
    assert set(out) == {"rewards", "scores", "extra_logs"}
    for key in ("rewards", "scores"):
        assert isinstance(out[key], torch.Tensor) and out[key].dtype == torch.float32
        assert out[key].shape == (len(CASES),)
    assert all(
        isinstance(v, torch.Tensor) and v.shape == (len(CASES),) for v in out["extra_logs"].values()
    )
    reference = [
        float(math_verify.verify(math_verify.parse(f"${g}$"), math_verify.parse(r)))
        for r, g in CASES
    ]
    assert out["rewards"].tolist() == reference
    assert out["scores"].tolist() == reference
    assert 0 < sum(reference) < len(reference)


def test_only_the_response_is_scored():
    """The prompt's few-shot '#### 7' must not be taken as the response's answer."""
    queries = [PROMPT + "the answer is 9", PROMPT + "the answer is 7"]
    out = gf.reward_func(queries, [PROMPT, PROMPT], ["7", "7"])
    assert out["rewards"].tolist() == [0.0, 1.0]
    # A query that does not start with its prompt (a BOS token, spacing changed by the
    # tokenizer's round trip) is cut after the prompt's first occurrence.
    assert gf.responses_of(["<s> Q? A: 2"], ["Q?"]) == [" A: 2"]
    assert gf.responses_of(["<s>Q:\n 1 +  1? A: 2"], ["Q: 1 + 1?"]) == [" A: 2"]
    assert gf.responses_of(["Q? A: 2 Q? A: 3"], ["Q?"]) == [" A: 2 Q? A: 3"]
    assert gf.responses_of(["unrelated 5", "Q? 5"], ["Q?", ""]) == [None, "Q? 5"]


def test_a_prompt_not_in_its_query_is_a_visible_failure_never_scored_whole(caplog):
    """Scoring the whole query would pay a response that copies the prompt's example
    answer (here '#### 7'): such a sample earns 0 and says why; the others are scored."""
    other_prompt = PROMPT.replace("Now:", "Now, please:")  # not the text that was sent
    queries = [PROMPT + "the answer is 7", "I copy: #### 7", PROMPT + "#### 9"]
    prompts = [PROMPT, other_prompt, PROMPT]
    with caplog.at_level("WARNING", logger="grpo_fast.integrations.openrlhf"):
        out = gf.reward_func(queries, prompts, ["7", "7", "9"])
    assert out["rewards"].tolist() == [1.0, 0.0, 1.0]
    assert out["scores"].tolist() == [1.0, 0.0, 1.0]
    logs = out["extra_logs"]
    assert logs["prompt_not_found"].tolist() == [0.0, 1.0, 0.0]
    assert logs["reward_error"].tolist() == [0.0, 1.0, 0.0]
    assert logs["math"].tolist() == [1.0, 0.0, 1.0] and logs["unscorable"].tolist() == [0.0] * 3
    [record] = [r for r in caplog.records if r.levelname == "WARNING"]
    assert "prompt is not in the query for 1 of 3" in record.getMessage()
    # The same key set as a success and a failure: OpenRLHF merges extra_logs by key.
    assert set(logs) == set(gf.reward_func(["Q 1"], ["Q"], ["1"])["extra_logs"])
    assert set(logs) == set(gf.reward_func(["a"], ["a", "b"], ["1"])["extra_logs"])


def test_a_copy_of_the_prompt_inside_the_response_is_scored_with_it():
    """The prompt's first occurrence ends it: a response that hedges, copies the prompt and
    answers again is scored whole (two boxes: a collection answer, not paid)."""
    response = r"\boxed{8} " + PROMPT + r"\boxed{9}"
    out = gf.reward_func([PROMPT + response], [PROMPT], ["9"])
    assert out["rewards"].tolist() == [0.0]


def test_unusable_labels_give_zero_reward_and_are_counted():
    out = gf.reward_func(["Q 5", "Q \\boxed{5}"], ["Q", "Q"], ["", "5"])
    assert out["rewards"].tolist() == [0.0, 1.0]
    assert out["extra_logs"]["unscorable"].tolist() == [1.0, 0.0]
    assert not torch.isnan(out["rewards"]).any()


def test_make_reward_func_weights_specs():
    fn = gf.make_reward_func(
        rewards.MathReward(), rewards.FormatReward(r"^<think>.*</think>", weight=0.5, name="think")
    )
    out = fn(
        ["P<think>x</think> \\boxed{2}", "P<think>x</think> \\boxed{3}", "P \\boxed{2}"],
        ["P"] * 3,
        ["2", "2", "2"],
    )
    assert out["rewards"].tolist() == [1.5, 0.5, 1.0]
    assert out["scores"].tolist() == [1.0, 0.0, 1.0]  # the first spec: math
    assert out["extra_logs"]["think"].tolist() == [1.0, 1.0, 0.0]
    with pytest.raises(InvalidInputError, match="success_column"):
        gf.make_reward_func(rewards.MathReward(), success_column="nope")


def test_failures_are_logged_and_rewarded_zero_never_raised(caplog):
    cases = [
        ((["a", "b"], ["a"], ["1", "2"]), 2, "queries has 2 entries but prompts has 1"),
        ((["a", "b"], ["a", "b"], ["1"]), 2, "labels has 1 entries but there are 2"),
        (("a", "a", ["1"]), 1, "lists of str"),
        ((["Q 1"], ["Q"], [{"answer": 1}]), 1, "labels\\[0\\] is dict"),
    ]
    ok = gf.reward_func(["Q 1"], ["Q"], ["1"])
    for args, n, reason in cases:
        caplog.clear()
        with caplog.at_level("WARNING", logger="grpo_fast.integrations.openrlhf"):
            out = gf.reward_func(*args)
        assert out["rewards"].tolist() == [0.0] * n and out["scores"].tolist() == [0.0] * n
        assert out["extra_logs"]["reward_error"].tolist() == [1.0] * n
        assert set(out["extra_logs"]) == set(ok["extra_logs"])  # OpenRLHF merges by key
        [record] = [r for r in caplog.records if r.levelname == "WARNING"]
        assert re.search(reason, record.getMessage())
    assert ok["extra_logs"]["reward_error"].tolist() == [0.0]
    # The scoring method itself still raises, for callers that want the error.
    with pytest.raises(InvalidInputError, match="queries has 2 entries"):
        gf.reward_func.score(["a", "b"], ["a"], ["1", "2"])


def test_make_reward_func_results_pickle():
    import pickle

    fn = gf.make_reward_func(
        rewards.MathReward(), rewards.FormatReward(r"</think>", weight=0.5, name="think")
    )
    args = (["P</think> \\boxed{2}", "P \\boxed{3}"], ["P", "P"], ["2", "2"])
    expected = fn(*args)
    for obj in (fn, gf.reward_func):
        clone = pickle.loads(pickle.dumps(obj))
        assert type(clone) is gf.RewardFunc
    clone = pickle.loads(pickle.dumps(fn))
    got = clone(*args)
    assert got["rewards"].tolist() == expected["rewards"].tolist() == [1.5, 0.0]
    assert got["extra_logs"]["think"].tolist() == [1.0, 0.0]


# --- OpenRLHF's own loader and experience code -------------------------------------------


def _tokenizer(special=("<|im_end|>", "<eos>", "</s>", "<|endoftext|>", "<|eot_id|>")):
    """Byte-level tokenizer with the end tokens of common chat templates as special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        eos_token=special[0],
        additional_special_tokens=list(special[1:]),
    )


class _StandInEngine:
    """Stand-in for OpenRLHF's vLLM engine actor: ``generate`` returns the scripted
    response's tokens, shaped as vLLM's RequestOutput."""

    def __init__(self, tokenizer, response, end_token):
        self.ids = tokenizer(response, add_special_tokens=False)["input_ids"]
        self.ids = self.ids + [tokenizer.convert_tokens_to_ids(end_token)]
        self.text = response

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        from types import SimpleNamespace

        out = SimpleNamespace(
            token_ids=self.ids, text=self.text, finish_reason="stop", logprobs=None
        )
        return SimpleNamespace(outputs=[out])


def _execute(response, label, end_token="<|im_end|>", prompt="<|im_start|>Q: 6*7?\n"):
    """OpenRLHF's SingleTurnAgentExecutor: loads integrations/openrlhf.py from its path
    (``--reward.remote_url``), generates with the stand-in engine, scores the query."""
    import asyncio
    import pickle
    from types import SimpleNamespace

    from openrlhf.utils.agent import SingleTurnAgentExecutor

    tokenizer = _tokenizer()
    executor = SingleTurnAgentExecutor(remote_rm_url=gf.__file__)
    assert type(executor.reward_func) is gf.RewardFunc
    pickle.loads(pickle.dumps(executor.reward_func))
    params = SimpleNamespace(max_tokens=256, logprobs=None)  # stand-in: vllm.SamplingParams
    return asyncio.run(
        executor.execute(
            prompt, label, params, 1024, tokenizer, _StandInEngine(tokenizer, response, end_token)
        )
    )


def test_through_openrlhfs_single_turn_executor():
    right = _execute(r"6*7 = \boxed{42}", "42")
    wrong = _execute(r"6*7 = \boxed{41}", "42")
    assert right["reward"].tolist() == [1.0] and right["scores"].tolist() == [1.0]
    assert wrong["reward"].tolist() == [0.0] and wrong["scores"].tolist() == [0.0]
    assert right["extra_logs"]["reward_error"].tolist() == [0.0]
    failed = _execute(r"6*7 = \boxed{42}", {"answer": "42"})  # a label of the wrong type
    assert failed["reward"].tolist() == [0.0]  # not None: OpenRLHF would train on None
    assert failed["extra_logs"]["reward_error"].tolist() == [1.0]


def test_special_end_tokens_are_not_text():
    """OpenRLHF decodes the query with skip_special_tokens=False: the response ends in the
    chat template's end token. Needs the verifier's special-token rule (VERIFY_SEMANTICS
    rule 7), implemented in the Rust extraction."""
    for response, label, end in [
        ("#### 72", "72", "<|im_end|>"),
        ("Answer: 72", "72", "<eos>"),
        ("The answer is 42", "42", "</s>"),
    ]:
        out = _execute(response, label, end_token=end)
        assert out["reward"].tolist() == [1.0], (response, end)


def _standin_vllm(monkeypatch):
    """samples_generator imports vllm (SamplingParams) and, through the Ray engine module,
    vllm.inputs.TokensPrompt and vllm.utils.random_uuid: stand-ins for those names only."""
    import sys
    import types

    vllm = types.ModuleType("vllm")
    vllm.__version__ = "0.29.0"
    vllm.SamplingParams = type("SamplingParams", (), {})
    inputs = types.ModuleType("vllm.inputs")
    inputs.TokensPrompt = dict
    utils = types.ModuleType("vllm.utils")
    utils.random_uuid = lambda: "0"
    for name, mod in (("vllm", vllm), ("vllm.inputs", inputs), ("vllm.utils", utils)):
        monkeypatch.setitem(sys.modules, name, mod)


def test_results_become_openrlhf_experiences(monkeypatch):
    """SamplesGenerator._process_response_into_experience, then OpenRLHF's batching: the
    extra_logs of a success and of a failure merge (same keys, numeric)."""
    import warnings

    _standin_vllm(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from openrlhf.trainer.ppo_utils.experience import (
            Experience,
            make_experience_batch,
            split_experience_batch,
        )
        from openrlhf.trainer.ppo_utils.samples_generator import SamplesGenerator

    responses = [
        _execute(r"6*7 = \boxed{42}", "42"),
        _execute(r"6*7 = \boxed{41}", "42"),
        _execute(r"6*7 = \boxed{42}", None),
        _execute(r"6*7 = \boxed{42}", {"answer": "42"}),
    ]
    exps = [
        SamplesGenerator._process_response_into_experience(None, r, max_len=1024) for r in responses
    ]
    assert [e.rewards.tolist() for e in exps] == [[1.0], [0.0], [0.0], [0.0]]
    batch = Experience.concat_experiences(exps, pad_token_id=0)
    assert batch.info["reward_error"].tolist() == [0.0, 0.0, 0.0, 1.0]
    assert batch.info["unscorable"].tolist() == [0.0, 0.0, 1.0, 0.0]
    assert len(split_experience_batch(batch)) == 4
    assert make_experience_batch(split_experience_batch(batch)).rewards.shape[0] == 4
