"""Two CPU processes (gloo): rewards gathered before group statistics, gradients averaged.

Each rank samples and scores its own prompts. The check: after one SGD step
both ranks hold the same weights, and those weights equal one step of plain
torch on the union of both ranks' completions, with advantages whose batch
std (``scale="batch"``) is taken over both ranks' rewards.
"""

from __future__ import annotations

import copy
import os
import socket

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from test_trainer import reference_logp, reference_loss, reference_rewards  # noqa: E402

from grpo_fast.trainer import Trainer, TrainerConfig  # noqa: E402

LR = 0.02
G = 4


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, port: int, out: str) -> None:
    os.environ.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    torch.set_num_threads(1)
    cfg = TrainerConfig(
        output_dir=os.path.join(out, "run"),
        max_steps=1,
        prompts_per_step=2,
        num_generations=G,
        eval_file="",
        optimizer="sgd",
        learning_rate=LR,
        max_grad_norm=0.0,
        scale="batch",
        progress=False,
        plot=False,
        seed=11,
        device="cpu",
    )
    trainer = Trainer(cfg)
    trainer.step()
    b = trainer.last_batch
    torch.save(
        {
            "prompts": [trainer.train_rows[i]["prompt"] for i in b.prompt_index for _ in range(G)],
            "prompt_ids": b.completions.prompt_ids,
            "completion_ids": b.completions.completion_ids,
            "texts": b.completions.texts,
            "advantages": b.advantages,
            "weights": {k: v.detach().clone() for k, v in trainer.model.state_dict().items()},
        },
        os.path.join(out, f"rank{rank}.pt"),
    )
    dist.destroy_process_group()


@pytest.mark.slow
def test_two_processes_match_one_step_on_the_union(tmp_path):
    mp.spawn(_worker, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True)
    r0, r1 = (torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in (0, 1))
    assert set(r0["prompts"]).isdisjoint(r1["prompts"]), "each rank samples its own prompts"
    for k in r0["weights"]:
        torch.testing.assert_close(r0["weights"][k], r1["weights"][k], rtol=0, atol=0)

    prompts = r0["prompts"] + r1["prompts"]
    rewards = reference_rewards(prompts, r0["texts"] + r1["texts"])
    assert 0 < rewards.mean() < 1, "the seed should give rewards with signal"
    groups = rewards.reshape(-1, G)
    adv = ((groups - groups.mean(1, keepdims=True)) / (rewards.std(ddof=1) + 1e-6)).ravel()
    np.testing.assert_allclose(np.concatenate([r0["advantages"], r1["advantages"]]), adv, rtol=1e-5)

    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(TrainerConfig().model, dtype=torch.float32)
    start = copy.deepcopy(model.state_dict())
    pids, cids = r0["prompt_ids"] + r1["prompt_ids"], r0["completion_ids"] + r1["completion_ids"]
    logp = reference_logp(model, pids, cids)
    loss = reference_loss(logp, [x.detach() for x in logp], logp, adv)
    loss.backward()
    moved = 0.0
    for name, p in model.named_parameters():
        want = start[name] - LR * p.grad
        torch.testing.assert_close(r0["weights"][name], want, rtol=1e-4, atol=1e-6, msg=name)
        moved = max(moved, float((want - start[name]).abs().max()))
    assert moved > 1e-4
