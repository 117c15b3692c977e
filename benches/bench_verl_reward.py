"""verl's reward loop on one batch: the naive manager with verl's default scorer against
``reward_manager.name=grpo_fast``, same run, same batch.

Both go through verl's ``RewardLoopWorker.compute_score_batch`` (what each reward-loop Ray
actor runs on its chunk): the naive manager decodes and scores each sample in executor
threads (verl's gsm8k regex, MATH string normalisation); the grpo_fast manager queues the
samples and scores them in one Rust call. 1,024 responses of about 1,500 characters, half
``openai/gsm8k`` (``#### n``) and half ``HuggingFaceH4/MATH-500`` (``\\boxed{}``), half right,
written so that verl's string comparison is a fair reference: both managers must give the
same scores. Run with ``make bench`` or ``pytest benches/bench_verl_reward.py
--benchmark-only``; the summary prints the ratio (>1: grpo-fast is faster).
"""

from __future__ import annotations

import asyncio
import itertools
import random
import warnings

import pytest

pytest.importorskip("verl")
torch = pytest.importorskip("torch")

N = 1_024
LENGTH = 1_500
GROUP = "verl reward loop, 1,024 responses of ~1,500 chars"
_PROSE = (
    "First we find how many eggs are left: 16 - 3 - 4 = 9. Each sells for $2, so "
    "she makes 9 * 2 = 18 dollars a day. We check the units and the arithmetic again. "
)
_seeds = itertools.count()


def _tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<|im_end|>")


def make_batch(tokenizer, seed: int):
    import numpy as np
    from verl import DataProto

    rng = random.Random(seed)
    sources, golds, responses = [], [], []
    for i in range(N):
        n = rng.randrange(1, 10_000)
        pred = n if i % 2 == 0 else n + 1
        if i % 4 < 2:
            src, tail = "openai/gsm8k", f"\n#### {pred}"
        else:
            src, tail = "HuggingFaceH4/MATH-500", f" So the answer is $\\boxed{{{pred}}}$."
        prose = f"[{seed}:{i}] " + (_PROSE * (LENGTH // len(_PROSE) + 1))[: LENGTH - len(tail)]
        sources.append(src)
        golds.append(str(n))
        responses.append(prose + tail)
    prompt = tokenizer("Solve the problem.\n", add_special_tokens=False)["input_ids"]
    ids = [
        tokenizer(r, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        for r in responses
    ]
    width = max(map(len, ids))
    pad = tokenizer.pad_token_id
    return DataProto.from_dict(
        tensors={
            "prompts": torch.tensor([prompt] * N),
            "responses": torch.tensor([r + [pad] * (width - len(r)) for r in ids]),
            "attention_mask": torch.tensor(
                [[1] * len(prompt) + [1] * len(r) + [0] * (width - len(r)) for r in ids]
            ),
        },
        non_tensors={
            "data_source": np.array(sources, dtype=object),
            "reward_model": np.array([{"ground_truth": g} for g in golds], dtype=object),
            "extra_info": np.array([{"index": i} for i in range(N)], dtype=object),
        },
    )


_workers: dict[str, object] = {}
_results: dict[str, list[float]] = {}


def _worker(manager: str, tokenizer_dir: str):
    import os

    import verl
    from omegaconf import OmegaConf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

        from grpo_fast.integrations import verl as gf_verl

        gf_verl.register_verl_reward_manager()
        path = os.path.join(
            os.path.dirname(verl.__file__), "trainer/config/_generated_ppo_trainer.yaml"
        )
        config = OmegaConf.load(path)
        config.actor_rollout_ref.model.path = tokenizer_dir
        config.reward.reward_manager.name = manager
        return RewardLoopWorker(config)


@pytest.mark.parametrize("impl", ["grpo-fast", "verl naive manager (default scorer)"])
def test_verl_reward_loop(benchmark, impl, tmp_path_factory):
    tokenizer = _tokenizer()
    directory = tmp_path_factory.mktemp("tokenizer")
    tokenizer.save_pretrained(directory)
    worker = _worker("grpo_fast" if impl == "grpo-fast" else "naive", str(directory))
    asyncio.set_event_loop(worker.loop)

    def run(data):
        out = worker.loop.run_until_complete(worker.compute_score_batch(data))
        return [float(o["reward_score"]) for o in out]

    def setup():
        return (make_batch(tokenizer, next(_seeds)),), {}

    benchmark.group = GROUP
    benchmark.extra_info["impl"] = impl
    try:
        scores = benchmark.pedantic(run, setup=setup, rounds=5, iterations=1)
        assert sum(scores) == N // 2  # every right answer found, no wrong one accepted
        _results[impl] = run(make_batch(tokenizer, 10**6))
    finally:
        worker.loop.run_until_complete(worker.loop.shutdown_default_executor())
        worker.loop.close()
        asyncio.set_event_loop(None)
    if len(_results) == 2:
        a, b = _results.values()
        assert a == b, "the two managers disagree on the same batch"


SCORE_GROUP = "verl scorers alone, the same 1,024 decoded responses"


@pytest.mark.parametrize("impl", ["grpo-fast", "verl default_compute_score"])
def test_verl_scorers_alone(benchmark, impl):
    """The scoring step alone, on decoded texts: verl's default scorer one item at a time
    (as its managers call it) against grpo-fast's batch call."""
    from verl.utils.reward_score import default_compute_score

    from grpo_fast.integrations import verl as gf_verl

    tokenizer = _tokenizer()

    def setup():
        data = make_batch(tokenizer, next(_seeds))
        width = data.batch["responses"].shape[1]
        lengths = data.batch["attention_mask"][:, -width:].sum(-1).tolist()
        texts = [
            tokenizer.decode(r[:n], skip_special_tokens=True)
            for r, n in zip(data.batch["responses"].tolist(), lengths, strict=True)
        ]
        sources = list(data.non_tensor_batch["data_source"])
        golds = [x["ground_truth"] for x in data.non_tensor_batch["reward_model"]]
        return (sources, texts, golds), {}

    if impl == "grpo-fast":

        def run(sources, texts, golds):
            return gf_verl.compute_score_batch(sources, texts, golds)
    else:

        def run(sources, texts, golds):
            return [
                float(default_compute_score(s, t, g))
                for s, t, g in zip(sources, texts, golds, strict=True)
            ]

    benchmark.group = SCORE_GROUP
    benchmark.extra_info["impl"] = impl
    scores = benchmark.pedantic(run, setup=setup, rounds=10, iterations=1)
    assert sum(scores) == N // 2
