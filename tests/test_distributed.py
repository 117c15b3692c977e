"""Two CPU processes (gloo) under DDP and FSDP2: one step against plain torch on the
union of both ranks' completions, generation with sharded weights, and checkpoints.

Each rank samples and scores its own prompts. After one SGD step both ranks hold
the same weights, and those equal one step of plain torch (full-vocabulary
log-softmax, written in ``test_trainer``) on both ranks' completions, with
advantages whose batch std (``scale="batch"``) is taken over both ranks' rewards;
the logged gradient norm is that gradient's norm. Under FSDP2 each rank holds
half the parameters.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from test_trainer import reference_logp, reference_loss, reference_rewards  # noqa: E402

from grpo_fast.errors import InvalidInputError  # noqa: E402
from grpo_fast.sampling import SamplingParams  # noqa: E402
from grpo_fast.train.modeling import LoraOptions, load_model, prepare_model  # noqa: E402
from grpo_fast.train.tracking import read_metrics  # noqa: E402
from grpo_fast.train.trainer import Trainer, TrainerConfig  # noqa: E402

LR = 0.02
G = 4
MODES = ["ddp", "fsdp"]
DEMO = TrainerConfig().model
EVAL_ROW = {"prompt": "12+34=", "answer": "46"}
GEN_PROMPTS = {0: ["12+34=", "7+8="], 1: ["1+1="]}  # unequal work: no rank waits for another


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _whole(t):
    """A parameter as one tensor (FSDP2's are DTensor shards)."""
    return (t.full_tensor() if hasattr(t, "full_tensor") else t).detach().clone()


def _local_numel(model) -> int:
    return sum((p.to_local() if hasattr(p, "to_local") else p).numel() for p in model.parameters())


#: One step's options: full weights (micro-batches, a frozen reference copy), LoRA (the
#: reference: adapters off), LoRA with a real run's bf16 autocast and checkpointing.
CASES = {
    "full": dict(grad_accum_steps=2, beta=0.05),
    "lora": dict(lora_r=4, beta=0.1),
    "lora_bf16": dict(
        lora_r=4, lora_target_modules=("all-linear",), dtype="bf16", gradient_checkpointing=True
    ),
}


def _one_step(out: str, parallel: str, options: dict) -> dict:
    cfg = TrainerConfig(
        output_dir=out,
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
        parallel=parallel,
        **options,
    )
    trainer = Trainer(cfg, eval_rows=[EVAL_ROW])
    start = {k: _whole(v) for k, v in trainer.model.state_dict().items()}
    record = trainer.step()
    b = trainer.last_batch
    greedy = SamplingParams(max_new_tokens=4, temperature=0.0)
    generated = trainer.policy.with_full_weights(
        trainer.sampler.sample, GEN_PROMPTS[dist.get_rank()], 1, greedy
    )
    return {
        "prompts": [trainer.train_rows[i]["prompt"] for i in b.prompt_index for _ in range(G)],
        "prompt_ids": b.completions.prompt_ids,
        "completion_ids": b.completions.completion_ids,
        "texts": b.completions.texts,
        "advantages": b.advantages,
        "grad_norm": record["grad_norm"],
        "start": start,
        "weights": {k: _whole(v) for k, v in trainer.model.state_dict().items()},
        "local_numel": _local_numel(trainer.model),
        "generated": generated.completion_ids,
        "local_numel_after_generation": _local_numel(trainer.model),
        "evaluation": trainer.evaluate(),  # one row: rank 1 has none to decode
    }


def _worker(rank: int, world: int, port: int, out: str, parallel: str) -> None:
    os.environ.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    torch.set_num_threads(1)
    result = {name: _one_step(os.path.join(out, name), parallel, o) for name, o in CASES.items()}
    if parallel == "fsdp":  # whole weights cannot become shards: a message, on every rank
        plain = os.path.join(out, "plain", "checkpoints", "step-0000001")
        try:
            Trainer(_plain_config(os.path.join(out, "again"), parallel="fsdp", resume=plain))
            result["refused"] = None
        except InvalidInputError as e:
            result["refused"] = str(e)
    torch.save(result, os.path.join(out, f"rank{rank}.pt"))
    dist.destroy_process_group()


def _plain_config(out: str, **options) -> TrainerConfig:
    return TrainerConfig(
        output_dir=out, max_steps=1, prompts_per_step=2, num_generations=G, eval_file=None,
        progress=False, plot=False, device="cpu", **options,
    )  # fmt: skip


@pytest.fixture(scope="module", params=MODES)
def two_ranks(request, tmp_path_factory):
    """What each of two ranks saw and did in one step under ``--parallel`` (ddp, fsdp)."""
    out = tmp_path_factory.mktemp(request.param)
    if request.param == "fsdp":  # a checkpoint of whole weights, written by one process
        Trainer(_plain_config(str(out / "plain"))).train()
    mp.spawn(_worker, args=(2, _free_port(), str(out), request.param), nprocs=2, join=True)
    return request.param, [torch.load(out / f"rank{r}.pt", weights_only=False) for r in (0, 1)]


def _reference_step(model, r0: dict, r1: dict, beta: float = 0.0) -> tuple[dict, float]:
    """One SGD step of plain torch on the union of both ranks' completions: the new
    weights and the gradient norm."""
    prompts = r0["prompts"] + r1["prompts"]
    rewards = reference_rewards(prompts, r0["texts"] + r1["texts"])
    assert 0 < rewards.mean() < 1, "the seed should give rewards with signal"
    groups = rewards.reshape(-1, G)
    adv = ((groups - groups.mean(1, keepdims=True)) / (rewards.std(ddof=1) + 1e-6)).ravel()
    np.testing.assert_allclose(np.concatenate([r0["advantages"], r1["advantages"]]), adv, rtol=1e-5)

    pids, cids = r0["prompt_ids"] + r1["prompt_ids"], r0["completion_ids"] + r1["completion_ids"]
    logp = reference_logp(model, pids, cids)
    ref = [x.detach() for x in logp]  # the starting weights: the reference copy
    if hasattr(model, "disable_adapter"):  # LoRA: the base, adapters off
        with torch.no_grad(), model.disable_adapter():
            ref = reference_logp(model, pids, cids)
    loss = reference_loss(logp, [x.detach() for x in logp], ref, adv, beta=beta)
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    norm = float(torch.linalg.vector_norm(torch.stack([g.norm() for g in grads])))
    named = dict(model.named_parameters())
    want = {k: v - LR * named[k].grad if named[k].grad is not None else v for k, v in named.items()}
    return {k: v.detach() for k, v in want.items()}, norm


@pytest.mark.slow
def test_full_fine_tuning_matches_one_process_on_the_union(two_ranks):
    parallel, (r0, r1) = two_ranks
    r0, r1 = r0["full"], r1["full"]
    assert set(r0["prompts"]).isdisjoint(r1["prompts"]), "each rank samples its own prompts"
    for k in r0["weights"]:
        torch.testing.assert_close(r0["weights"][k], r1["weights"][k], rtol=0, atol=0)

    model = load_model(DEMO)
    want, norm = _reference_step(model, r0, r1, beta=0.05)
    moved = 0.0
    for name, w in want.items():
        torch.testing.assert_close(r0["weights"][name], w, rtol=1e-4, atol=1e-6, msg=name)
        moved = max(moved, float((w - r0["start"][name]).abs().max()))
    assert moved > 1e-4
    assert r0["grad_norm"] == pytest.approx(norm, rel=1e-4)
    total = sum(p.numel() for p in model.parameters())
    if parallel == "fsdp":  # each rank holds its half of every parameter (+ padding)
        assert r0["local_numel"] + r1["local_numel"] == pytest.approx(total, rel=0.01)
        assert r0["local_numel"] < 0.55 * total
    else:
        assert r0["local_numel"] == total


@pytest.mark.slow
def test_a_lora_step_matches_one_process_and_the_ranks_share_the_adapters(two_ranks):
    """LoRA's A matrices start random on each rank: the engine starts every rank from
    rank 0's, and the step (with the adapters-off reference of ``beta``) is plain torch's."""
    _, (r0, r1) = two_ranks
    r0, r1 = r0["lora"], r1["lora"]
    for k in r0["weights"]:
        torch.testing.assert_close(r0["start"][k], r1["start"][k], rtol=0, atol=0, msg=k)
        torch.testing.assert_close(r0["weights"][k], r1["weights"][k], rtol=0, atol=0, msg=k)

    model = prepare_model(load_model(DEMO), lora=LoraOptions(r=4))
    model.load_state_dict(r0["start"])
    want, norm = _reference_step(model, r0, r1, beta=0.1)
    moved = set()
    for name, w in want.items():
        torch.testing.assert_close(r0["weights"][name], w, rtol=1e-4, atol=1e-6, msg=name)
        if not torch.equal(w, r0["start"][name]):
            moved.add(name)
    assert moved and all("lora_B" in n for n in moved), sorted(moved)  # B starts at 0: A waits
    assert r0["grad_norm"] == pytest.approx(norm, rel=1e-4)


@pytest.mark.slow
def test_generation_with_the_weights_gathered_is_the_whole_models(two_ranks):
    """Under FSDP2 the sampler runs with every layer gathered; each rank generates its
    own prompts (unequal work), the result is the unsharded model's greedy decoding,
    and the parameters are shards again afterwards."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _, ranks = two_ranks
    tok = AutoTokenizer.from_pretrained(DEMO)
    model = AutoModelForCausalLM.from_pretrained(DEMO, dtype=torch.float32).eval()
    model.load_state_dict(ranks[0]["full"]["weights"])
    for rank, r in enumerate(ranks):
        want = []
        for prompt in GEN_PROMPTS[rank]:
            ids = tok(prompt, return_tensors="pt", add_special_tokens=False)
            out = model.generate(**ids, max_new_tokens=4, do_sample=False, pad_token_id=0)
            new = out[0, ids["input_ids"].shape[1] :].tolist()
            want.append(new[: new.index(tok.eos_token_id) + 1] if tok.eos_token_id in new else new)
        assert r["full"]["generated"] == want
        assert r["full"]["local_numel_after_generation"] == r["full"]["local_numel"]
    # The evaluation decodes each rank's share (rank 1: none) and gathers the scores.
    ids = tok(EVAL_ROW["prompt"], return_tensors="pt", add_special_tokens=False)
    out = model.generate(**ids, max_new_tokens=4, do_sample=False, pad_token_id=0)
    text = tok.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=True)
    accuracy = float(text.strip() == EVAL_ROW["answer"])
    assert ranks[0]["full"]["evaluation"] == ranks[1]["full"]["evaluation"]
    assert ranks[0]["full"]["evaluation"]["eval_accuracy"] == accuracy


# ---------------------------------------------------------------------- torchrun, kill, resume
# A TRL-style reward (exact sum) that kills rank 1 (SIGKILL) at its KILL_AT-th call: the
# run dies in the rollout of step KILL_AT, after the checkpoint of the step before.
KILLER = """
import os, signal
calls = 0
def exact(completions, answer, **columns):
    global calls
    calls += 1
    if os.environ.get("RANK") == "1" and calls == int(os.environ.get("KILL_AT", "0")):
        os.kill(os.getpid(), signal.SIGKILL)
    return [float(c.strip() == a) for c, a in zip(completions, answer)]
"""
STEPS = 4


def _torchrun(out, *flags: str, kill_at: int = 0, tmp) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(tmp), KILL_AT=str(kill_at), OMP_NUM_THREADS="1")
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
        "-m", "grpo_fast", "train", "--output-dir", str(out), "--reward", "killer.exact",
        "--max-steps", str(STEPS), "--save-every", "1", "--prompts-per-step", "2",
        "--num-generations", "4", "--eval-file", "none", "--learning-rate", "1e-3",
        "--no-progress", "--no-plot", "--device", "cpu", "--seed", "3", *flags,
    ]  # fmt: skip
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module", params=MODES)
def killed_and_resumed(request, tmp_path_factory):
    """A 2-process run of STEPS steps, and the same run killed in step 3 and resumed."""
    tmp = tmp_path_factory.mktemp(f"kill-{request.param}")
    (tmp / "killer.py").write_text(KILLER)
    flags = ("--parallel", request.param)
    whole = _torchrun(tmp / "whole", *flags, tmp=tmp)
    assert whole.returncode == 0, whole.stderr[-3000:]
    killed = _torchrun(tmp / "resumed", *flags, kill_at=3, tmp=tmp)
    assert killed.returncode != 0, "rank 1 should have been killed"
    steps = sorted(p.name for p in (tmp / "resumed" / "checkpoints").glob("step-*"))
    assert steps == ["step-0000001", "step-0000002"], steps
    resumed = _torchrun(tmp / "resumed", *flags, "--resume", "auto", tmp=tmp)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resumed from step 2" in resumed.stderr
    return request.param, tmp / "whole", tmp / "resumed"


def _checkpoint_state(path) -> dict:
    """A checkpoint's model (and a sharded one's optimizer) state, read with torch's own
    readers: safetensors, or DCP's converter to one torch.save file."""
    if (path / "sharded").is_dir():
        from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

        with tempfile.TemporaryDirectory() as tmp:
            dcp_to_torch_save(path / "sharded", f"{tmp}/state.pt")
            return torch.load(f"{tmp}/state.pt", weights_only=False)
    from safetensors.torch import load_file

    state = torch.load(path / "trainer_state.pt", weights_only=False)
    return {"model": load_file(path / "model.safetensors"), "optimizer": state["optimizer"]}


def _metrics(run) -> list[dict]:
    """metrics.jsonl without the timings."""
    drop = ("time_", "tokens_per_s")
    return [
        {k: v for k, v in r.items() if not k.startswith(drop)}
        for r in read_metrics(run / "metrics.jsonl")
    ]


def _assert_equal(a, b, where="") -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            _assert_equal(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_equal(x, y, f"{where}[{i}]")
    elif isinstance(a, torch.Tensor):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=where)
    else:
        assert a == b, where


@pytest.mark.slow
def test_a_run_killed_and_resumed_ends_where_an_uninterrupted_one_does(killed_and_resumed):
    parallel, whole, resumed = killed_and_resumed
    last = f"checkpoints/step-{STEPS:07d}"
    a, b = _checkpoint_state(whole / last), _checkpoint_state(resumed / last)
    _assert_equal(a, b)
    start = load_model(DEMO).state_dict()
    weights = a["model"]
    if parallel == "fsdp":  # DCP keys: the LogProbs module's ("model." + the model's own)
        weights = {k.removeprefix("model."): v for k, v in weights.items()}
    assert any(not torch.equal(weights[k], v) for k, v in start.items() if k in weights)
    rows = _metrics(resumed)
    assert [r["step"] for r in rows] == [0, 1, 2, 3, 4]  # steps 3-4 replace the lost try
    assert _metrics(whole) == rows


@pytest.mark.slow
def test_what_each_engine_writes(killed_and_resumed):
    """DDP: rank 0 writes the model once (safetensors), the optimizer in trainer_state.pt.
    FSDP2: every rank its shards through DCP, listed in the manifest."""
    parallel, whole, _ = killed_and_resumed
    path = whole / f"checkpoints/step-{STEPS:07d}"
    manifest = json.loads((path / "manifest.json").read_text())
    files = set(manifest["files"])
    assert {"rng-rank0.pt", "rng-rank1.pt", "trainer_state.pt", "config.json"} <= files
    state = torch.load(path / "trainer_state.pt", weights_only=False)
    if parallel == "ddp":
        assert "model.safetensors" in files and "optimizer" in state
        assert not any(f.startswith("sharded/") for f in files)
    else:
        want = {"sharded/.metadata", "sharded/__0_0.distcp", "sharded/__1_0.distcp"}
        assert want <= files and "model.safetensors" not in files
        assert "optimizer" not in state


def _exact(completions, answer, **columns):
    return [float(c.strip() == a) for c, a in zip(completions, answer, strict=True)]


@pytest.mark.slow
@pytest.mark.parametrize("killed_and_resumed", ["fsdp"], indirect=True)
def test_a_sharded_checkpoint_of_two_ranks_resumes_in_one_process(killed_and_resumed, tmp_path):
    """DCP reshards: one process takes the model and optimizer state of two, exactly,
    and goes on (its checkpoints then hold one shard)."""
    _, whole, _ = killed_and_resumed
    run = tmp_path / "run"
    shutil.copytree(whole, run)
    ckpt = run / f"checkpoints/step-{STEPS:07d}"
    want = _checkpoint_state(ckpt)
    cfg = TrainerConfig(
        output_dir=str(run), resume=str(ckpt), max_steps=STEPS + 1, save_every=1,
        prompts_per_step=2, num_generations=4, eval_file=None, learning_rate=1e-3,
        progress=False, plot=False, device="cpu", seed=3, parallel="fsdp",
    )  # fmt: skip
    trainer = Trainer(cfg, rewards=[_exact])
    assert trainer.step_count == STEPS
    weights = {f"model.{k}": v for k, v in trainer.model.state_dict().items()}
    _assert_equal({k: weights[k] for k in want["model"]}, want["model"])
    moments = want["optimizer"]["state"]
    named = list(trainer.model.named_parameters())
    assert len(moments) == len(named)
    for name, p in named:
        for key in ("exp_avg", "exp_avg_sq", "step"):
            torch.testing.assert_close(
                trainer.optimizer.state[p][key], moments[f"model.{name}"][key], rtol=0, atol=0
            )
    trainer.train()
    manifest = json.loads((run / f"checkpoints/step-{STEPS + 1:07d}/manifest.json").read_text())
    assert manifest["world"] == 1
    assert {f for f in manifest["files"] if f.endswith(".distcp")} == {"sharded/__0_0.distcp"}


# ---------------------------------------------------------------------- one process
def test_a_one_process_fsdp_run_writes_dcp_checkpoints_that_resume_exactly(make_config, tmp_path):
    """With one process ``--parallel fsdp`` shards nothing but checkpoints through DCP;
    such a checkpoint resumes exactly under fsdp, and under ddp too (DCP fills whole
    tensors)."""
    common = dict(parallel="fsdp", save_every=1, eval_every=1, seed=5, eval_size=4)
    whole, split, other = (tmp_path / n for n in ("whole", "split", "other"))
    Trainer(make_config(output_dir=str(whole), max_steps=3, **common)).train()
    Trainer(make_config(output_dir=str(split), max_steps=2, **common)).train()
    shutil.copytree(split, other)
    torch.manual_seed(1234)  # a fresh process's state: the checkpoint restores its own
    Trainer(make_config(output_dir=str(split), max_steps=3, resume="auto", **common)).train()
    last = "checkpoints/step-0000003"
    want = _checkpoint_state(whole / last)
    assert (split / last / "sharded" / ".metadata").is_file()
    _assert_equal(_checkpoint_state(split / last), want)
    assert _metrics(whole) == _metrics(split)

    torch.manual_seed(1234)
    ddp = dict(common, parallel="ddp")
    Trainer(make_config(output_dir=str(other), max_steps=3, resume="auto", **ddp)).train()
    from safetensors.torch import load_file

    weights = load_file(other / last / "model.safetensors")
    assert not (other / last / "sharded").exists()
    for k, v in weights.items():
        torch.testing.assert_close(v, want["model"][f"model.{k}"], rtol=0, atol=0, msg=k)


def test_a_damaged_shard_is_skipped_and_a_mismatched_checkpoint_named(make_config, capsys):
    run = Path(make_config().output_dir)
    Trainer(make_config(parallel="fsdp", save_every=1, max_steps=2)).train()
    shard = run / "checkpoints" / "step-0000002" / "sharded" / "__0_0.distcp"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(data)
    capsys.readouterr()
    trainer = Trainer(make_config(parallel="fsdp", resume="auto", max_steps=3))
    assert trainer.step_count == 1
    err = capsys.readouterr().err
    assert "skipping" in err and "sharded/__0_0.distcp is damaged" in err, err
    # A LoRA run has other parameters than the full model's checkpoint.
    step1 = str(run / "checkpoints" / "step-0000001")
    with pytest.raises(InvalidInputError, match="does not match this run's model") as refused:
        Trainer(make_config(parallel="fsdp", resume=step1, max_steps=3, lora_r=4))
    assert "Missing key" in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(sampler="vllm"), "--parallel fsdp samples with --sampler hf"),
        (dict(dtype="fp16"), "fp16's loss scaling would see only this rank's shard"),
    ],
)
def test_fsdp_refuses_what_it_cannot_do(options, message):
    with pytest.raises(InvalidInputError, match=message):
        TrainerConfig(parallel="fsdp", **options).validate()


def test_the_command_line_names_a_bad_parallel_choice(tmp_path, capsys):
    from grpo_fast.cli import main

    for flags, message in [
        (["--parallel", "zero3"], "parallel must be one of ('ddp', 'fsdp'), got 'zero3'"),
        (["--parallel", "fsdp", "--dtype", "fp16"], "use --dtype bf16"),
    ]:
        with contextlib.suppress(SystemExit):
            assert main(["train", "--output-dir", str(tmp_path / "o"), *flags]) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, err


@pytest.mark.slow
@pytest.mark.parametrize("two_ranks", ["fsdp"], indirect=True)
def test_a_sharded_run_names_a_checkpoint_of_whole_weights(two_ranks):
    _, ranks = two_ranks
    for r in ranks:
        assert "holds whole weights (a run without --parallel fsdp)" in (r["refused"] or "")


@pytest.mark.slow
def test_lora_with_a_real_runs_bf16_and_checkpointing_trains_the_same_adapters(two_ranks):
    """bf16 autocast over a bf16 base with fp32 adapters, gradient checkpointing (FSDP2
    recomputes inside its gathered layers): both ranks end equal, only adapters move."""
    _, (r0, r1) = two_ranks
    r0, r1 = r0["lora_bf16"], r1["lora_bf16"]
    for k in r0["weights"]:
        torch.testing.assert_close(r0["weights"][k], r1["weights"][k], rtol=0, atol=0, msg=k)
        moved = not torch.equal(r0["weights"][k], r0["start"][k])
        assert moved == ("lora_B" in k), k
        assert r0["weights"][k].dtype == (torch.float32 if "lora_" in k else torch.bfloat16), k
    assert r0["grad_norm"] > 0


@pytest.mark.parametrize("lora", [False, True])
def test_export_writes_a_sharded_checkpoint_as_a_whole_model(make_config, tmp_path, lora):
    """``grpo-fast export`` of a ``--parallel fsdp`` checkpoint: the weights in its shards
    (read with DCP's own converter), LoRA merged as ``W + alpha / r * B @ A``."""
    from safetensors.torch import load_file

    from grpo_fast.cli import main

    options = dict(lora_r=4, lora_alpha=8.0) if lora else {}
    cfg = make_config(parallel="fsdp", max_steps=1, optimizer="sgd", learning_rate=0.5, **options)
    Trainer(cfg).train()
    ckpt = Path(cfg.output_dir) / "checkpoints" / "step-0000001"
    state = _checkpoint_state(ckpt)["model"]
    assert main(["export", str(ckpt), str(tmp_path / "out")]) == 0
    exported = load_file(tmp_path / "out" / "model.safetensors")
    assert exported and "model.embed_tokens.weight" in exported
    merged = 0
    for name, w in exported.items():
        if not lora:
            want = state[f"model.{name}"]
        else:
            module, param = name.rsplit(".", 1)
            prefix = f"model.base_model.model.{module}"
            if f"{prefix}.lora_A.default.weight" not in state:
                want = state[f"{prefix}.{param}"]
            elif param == "bias":
                want = state[f"{prefix}.base_layer.bias"]
            else:
                a, b = (state[f"{prefix}.lora_{x}.default.weight"] for x in "AB")
                want = state[f"{prefix}.base_layer.weight"] + 8.0 / 4 * b @ a
                merged += int(b.abs().max() > 0)
        torch.testing.assert_close(w, want, rtol=1e-6, atol=1e-7, msg=name)
    assert merged > 0 or not lora


# ---------------------------------------------------------------------- FSDP2 on one GPU
def _fsdp_alone(rank: int, port: int, out: str, device: str) -> None:
    """FSDP2 over a one-process group (nccl on CUDA: a GPU machine has one) against the
    same model unwrapped: the loss forward and its gradients, the gradient norm,
    generation with gathered weights, and a DCP round trip of model and optimizer."""
    import torch.distributed.checkpoint as dcp

    from grpo_fast.sampling import HFSampler
    from grpo_fast.train.distributed import _wrap, init_process_group
    from grpo_fast.train.forward import completion_logprobs, pack
    from grpo_fast.train.modeling import load_tokenizer

    os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    init_process_group(device, local_rank=0)  # the trainer's: on CUDA, nccl and gloo
    torch.manual_seed(0)
    tok = load_tokenizer(DEMO)
    plain = load_model(DEMO, device)
    model = load_model(DEMO, device)
    policy = _wrap(model, "fsdp", frozen=False, mode="fsdp")
    assert policy.sharded
    enc = [tok(p, add_special_tokens=False)["input_ids"] for p in ("12+34=", "7+8=")]
    packed = pack([enc[0]] * 2 + [enc[1]] * 2, [[3, 4, 1], [5, 1], [6, 1], [7, 8, 9, 1]], 0, device)
    out_plain = completion_logprobs(plain, packed, group_size=2, share_prompt_prefix=False)
    out_fsdp = policy(packed, group_size=2, share_prompt_prefix=True)
    result: dict = {"logp": [t.detach().cpu() for t in (out_plain[0], out_fsdp[0])]}
    for lp in (out_plain[0], out_fsdp[0]):
        (-(lp * packed.completion_mask).sum()).backward()
    grads = {n: p.grad for n, p in plain.named_parameters()}
    result["grads"] = [
        (grads[n].cpu(), p.grad.full_tensor().cpu()) for n, p in model.named_parameters()
    ]
    total = torch.linalg.vector_norm(torch.stack([g.norm() for g in grads.values()]))
    result["norm"] = (float(total), policy.clip_grad_norm(0.0))
    greedy = SamplingParams(max_new_tokens=4, temperature=0.0)
    prompts = ["12+34=", "7+8="]
    result["generated"] = [
        HFSampler(plain, tok).sample(prompts, 2, greedy).completion_ids,
        policy.with_full_weights(HFSampler(model, tok).sample, prompts, 2, greedy).completion_ids,
    ]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    optimizer.step()
    saved = {k: _whole(v).cpu() for k, v in model.state_dict().items()}
    dcp.save(policy.state_dict(optimizer), checkpoint_id=os.path.join(out, "dcp"))
    again = _wrap(load_model(DEMO, device), "fsdp", frozen=False, mode="fsdp")
    optimizer2 = torch.optim.AdamW(again.model.parameters(), lr=1e-2)
    state = again.state_dict(optimizer2)
    dcp.load(state, checkpoint_id=os.path.join(out, "dcp"))
    again.load_state_dict(state, optimizer2)
    result["reloaded"] = (saved, {k: _whole(v).cpu() for k, v in again.model.state_dict().items()})
    torch.save(result, os.path.join(out, "result.pt"))
    dist.destroy_process_group()


@pytest.mark.parametrize(
    "device",
    [
        "cpu",
        pytest.param(
            "cuda",
            marks=[
                pytest.mark.cuda,
                pytest.mark.skipif(
                    not torch.cuda.is_available(),
                    reason="needs a CUDA GPU (scripts/gpu_check.sh runs it on one)",
                ),
            ],
        ),
    ],
)
def test_fsdp2_in_one_process_group_is_the_unwrapped_model(tmp_path, device):
    mp.spawn(_fsdp_alone, args=(_free_port(), str(tmp_path), device), nprocs=1, join=True)
    r = torch.load(tmp_path / "result.pt", weights_only=False)
    torch.testing.assert_close(r["logp"][1], r["logp"][0], rtol=1e-5, atol=1e-5)
    for plain, sharded in r["grads"]:
        torch.testing.assert_close(sharded, plain, rtol=1e-4, atol=1e-5)
    assert r["norm"][1] == pytest.approx(r["norm"][0], rel=1e-5)
    assert r["generated"][1] == r["generated"][0]
    _assert_equal(*r["reloaded"])


def test_a_full_disk_while_writing_shards_says_so_and_keeps_the_older_ones(
    make_config, monkeypatch
):
    from torch.distributed.checkpoint import FileSystemWriter

    from grpo_fast.errors import CheckpointError

    trainer = Trainer(make_config(parallel="fsdp", save_every=1, max_steps=3))
    write = FileSystemWriter.write_data

    def full_disk(self, plan, planner):
        if trainer.step_count == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
        return write(self, plan, planner)

    monkeypatch.setattr(FileSystemWriter, "write_data", full_disk)
    with pytest.raises(CheckpointError, match=r"step 2 was not written \(no space left on device"):
        try:
            trainer.train()
        except CheckpointError as e:
            assert "\n" not in str(e), str(e)  # DCP's error, unwrapped: one line
            raise
    root = Path(trainer.config.output_dir) / "checkpoints"
    assert sorted(p.name for p in root.iterdir()) == ["step-0000001"]
