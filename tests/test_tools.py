"""Tool use and multi-turn rollouts (grpo_fast.tools): the toolbox's safety, call parsing,
the exact token sequences and masks of multi-turn rollouts, and the loss on them."""

from __future__ import annotations

import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from grpo_fast.errors import InvalidInputError  # noqa: E402
from grpo_fast.sampling import Completions, HFSampler, SamplingParams  # noqa: E402
from grpo_fast.tools import Toolbox, calc, load_tool, parse_tool_calls, tool_suffix_ids  # noqa: E402
from grpo_fast.tools.rollouts import RolloutFuncSampler, ToolSampler  # noqa: E402
from grpo_fast.train.data import DATA_DIR  # noqa: E402

MODEL = DATA_DIR / "tiny_tool"
CALL = '<tool_call>{"name": "calc", "arguments": {"expression": "%s"}}</tool_call>'


@pytest.fixture(scope="module")
def tok():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(MODEL)


def enc(tok, text):
    return tok(text, add_special_tokens=False)["input_ids"]


# ---------------------------------------------------------------- the toolbox
def test_bad_schema_is_refused_naming_the_function():
    def no_hints(x):
        """Does things.

        Args:
            x: a thing
        """

    with pytest.raises(InvalidInputError, match="tool 'no_hints'"):
        Toolbox([no_hints])

    def no_doc(x: int) -> int:
        return x

    with pytest.raises(InvalidInputError, match="tool 'no_doc'"):
        Toolbox([no_doc])


def test_calls_fail_as_messages_never_as_exceptions():
    def boom(x: int) -> int:
        """Raise.

        Args:
            x: anything
        """
        raise RuntimeError("kaput")

    def slow(x: int) -> int:
        """Hang.

        Args:
            x: anything
        """
        time.sleep(30)
        return x

    def big(x: int) -> str:
        """Talk a lot.

        Args:
            x: anything
        """
        return "y" * 10_000

    box = Toolbox([boom, slow, big, calc], timeout=0.2, max_output_chars=50)
    r = box.call("boom", {"x": 1})
    assert r.error and r.content == "error: RuntimeError: kaput"
    t0 = time.perf_counter()
    r = box.call("slow", {"x": 1})
    assert r.error and "timed out" in r.content and time.perf_counter() - t0 < 5
    r = box.call("big", {"x": 1})
    assert not r.error and len(r.content) == 50 and r.content.endswith("...")
    # Only registered names run; the arguments must be an object.
    assert box.call("system", {"command": "ls"}).error
    assert box.call("calc", ["1+1"]).error
    assert box.call("calc", {"expression": "__import__('os')"}).error
    assert box.call("calc", {"expression": "23*17"}).content == "391"


def test_load_tool():
    assert load_tool("grpo_fast.tools.builtin:calc") is calc
    with pytest.raises(InvalidInputError, match="cannot import"):
        load_tool("grpo_fast.tools.builtin:nope")


def test_parse_tool_calls():
    calls = parse_tool_calls(CALL % "2*3" + " and " + CALL % "4+4")
    assert [(c.name, c.arguments) for c in calls] == [
        ("calc", {"expression": "2*3"}),
        ("calc", {"expression": "4+4"}),
    ]
    assert parse_tool_calls("<tool_call>[1]</tool_call>")[0].error
    assert parse_tool_calls("391") == []


# ---------------------------------------------------------------- scripted rollouts
class Scripted:
    """A backend that answers from a script: the first turn by prompt, then one
    continuation per call, recording every sequence it is asked to continue."""

    def __init__(self, tok, first, then):
        self.tok, self.first, self.then = tok, first, list(then)
        self.asked: list[list[int]] = []

    def update_weights(self, model):
        pass

    def sample(self, prompts, n, params):
        pids = [enc(self.tok, p) for p in prompts for _ in range(n)]
        ids = [list(self.first) for _ in pids]
        lps = [[-0.5] * len(i) for i in ids]
        return Completions(self.tok.batch_decode(ids), pids, ids, lps, n)

    def continue_ids(self, sequences, params):
        self.asked.extend(list(s) for s in sequences)
        out = [list(self.then.pop(0)) for _ in sequences]
        return [o[: params.max_new_tokens] for o in out], [[-0.25] * len(o) for o in out]


def test_multi_turn_token_sequence_and_mask(tok):
    eos = tok.eos_token_id
    first = enc(tok, CALL % "23*17") + [eos]
    answer = enc(tok, "391") + [eos]
    backend = Scripted(tok, first, [answer, answer])
    sampler = ToolSampler(backend, tok, [calc])
    out = sampler.sample(["23*17="], 2, SamplingParams(max_new_tokens=40))
    suffix = enc(tok, "<tool_response>391</tool_response>")
    assert tool_suffix_ids(tok, [("calc", "391")]) == suffix
    for i in range(2):
        # The sampled ids, then the tool message's, then the continuation: no re-tokenizing.
        assert out.completion_ids[i] == first + suffix + answer
        assert out.tool_mask[i] == [1] * len(first) + [0] * len(suffix) + [1] * len(answer)
        assert out.logprobs[i] == [-0.5] * len(first) + [0.0] * len(suffix) + [-0.25] * 4
        assert out.texts[i] == "391"  # the last turn, as TRL's rewards read it
    # The backend continued from exactly prompt + sampled + tool tokens.
    assert backend.asked == [enc(tok, "23*17=") + first + suffix] * 2
    assert out.episodes.tool_calls == [1, 1] and out.episodes.turns == [2, 2]
    assert out.episodes.tool_errors == [0, 0] and out.episodes.cut == [False, False]


def test_tool_errors_go_back_to_the_model(tok):
    eos = tok.eos_token_id
    first = enc(tok, CALL % "23*") + [eos]  # not arithmetic: calc raises
    backend = Scripted(tok, first, [enc(tok, "1") + [eos]])
    sampler = ToolSampler(backend, tok, [calc], max_output_chars=20)
    out = sampler.sample(["23*17="], 1, SamplingParams(max_new_tokens=60))
    assert out.episodes.tool_errors == [1] and out.episodes.turns == [2]
    tool_part = [t for t, m in zip(out.completion_ids[0], out.tool_mask[0], strict=True) if not m]
    # The character-level vocabulary has no letters: the message's text, as it tokenizes.
    want = tool_suffix_ids(tok, [("calc", "error: SyntaxError: invalid syntax"[:17] + "...")])
    assert tool_part == want


def test_limits_end_the_episode(tok):
    eos = tok.eos_token_id
    first = enc(tok, CALL % "23*17") + [eos]
    again = enc(tok, CALL % "1+1") + [eos]
    # max_tool_calls=1: the second call is not run and the episode ends on it.
    backend = Scripted(tok, first, [again])
    out = ToolSampler(backend, tok, [calc], max_tool_calls=1).sample(
        ["23*17="], 1, SamplingParams(max_new_tokens=60)
    )
    assert out.episodes.tool_calls == [1] and out.episodes.cut == [True]
    assert out.completion_ids[0][-len(again) :] == again
    # A budget with no room for the tool's message: the episode ends on the call.
    backend = Scripted(tok, first, [])
    out = ToolSampler(backend, tok, [calc]).sample(["23*17="], 1, SamplingParams(max_new_tokens=12))
    assert out.completion_ids[0] == first and out.episodes.cut == [True]
    # The continuation is cut to what is left of the budget (tool tokens count).
    backend = Scripted(tok, first, [enc(tok, "391391391") + [eos]])
    out = ToolSampler(backend, tok, [calc]).sample(["23*17="], 1, SamplingParams(max_new_tokens=20))
    assert len(out.completion_ids[0]) == 20 == len(out.tool_mask[0])


def test_template_without_tool_messages_is_refused(tok):
    from transformers import AutoTokenizer

    t = AutoTokenizer.from_pretrained(MODEL)
    t.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    t.chat_template = (
        "{% for m in messages %}{% if m['role'] != 'tool' %}{{ m['content'] }}{% endif %}"
        "{% endfor %}"
    )
    with pytest.raises(InvalidInputError, match="does not render tool messages"):
        ToolSampler(Scripted(t, [], []), t, [calc])


# ---------------------------------------------------------------- the HF sampler, for real
@pytest.fixture(scope="module")
def model():
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    return AutoModelForCausalLM.from_pretrained(MODEL).eval()


class Recording(HFSampler):
    """HFSampler that keeps every token it generated."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.segments: list[list[int]] = []

    def continue_ids(self, sequences, params):
        ids, lps = super().continue_ids(sequences, params)
        self.segments.extend(ids)
        return ids, lps


def test_hf_multi_turn_logprobs_are_those_of_the_sampled_context(tok, model):
    """The trainer's forward over the whole multi-turn sequence gives every model token
    the log-prob the sampler drew it with: each turn's context is exactly what it was
    sampled after (no tokenization drift)."""
    from grpo_fast.train.forward import completion_logprobs, pack

    torch.manual_seed(1)
    backend = Recording(model, tok, logprobs=True)
    sampler = ToolSampler(backend, tok, [calc])
    out = sampler.sample(["23*17=", "45*67="], 8, SamplingParams(max_new_tokens=24))
    called = [i for i, k in enumerate(out.episodes.tool_calls) if k]
    assert called, "the tiny model should call the tool in some of 16 samples"
    assert len(backend.segments) >= len(called)
    for i in called:  # the second turn's tokens are the ones generated, untouched
        model_tokens = [
            t for t, m in zip(out.completion_ids[i], out.tool_mask[i], strict=True) if m
        ]
        assert any(model_tokens[-len(s) :] == s for s in backend.segments if s)
    packed = pack(out.prompt_ids, out.completion_ids, tok.pad_token_id)
    with torch.no_grad():
        logp, _ = completion_logprobs(model, packed)
    for i in range(len(out)):
        n = len(out.completion_ids[i])
        got = logp[i, :n].numpy()
        want = np.array(out.logprobs[i])
        m = np.array(out.tool_mask[i], bool)
        np.testing.assert_allclose(got[m], want[m], atol=2e-4)


def test_rollout_func_contract(tok):
    class T:
        tokenizer = tok

    def rollout(prompts, trainer):
        ids = [enc(tok, "12"), enc(tok, "34")]
        return {"prompt_ids": [[5], [5]], "completion_ids": ids, "logprobs": None}

    s = RolloutFuncSampler(rollout, T(), Scripted(tok, [], []))
    out = s.sample(["p"], 2, SamplingParams())
    assert out.texts == ["12", "34"] and out.tool_mask is None
    bad = RolloutFuncSampler(lambda p, t: {"prompt_ids": []}, T(), Scripted(tok, [], []))
    with pytest.raises(InvalidInputError, match="completion_ids"):
        bad.sample(["p"], 2, SamplingParams())


# ---------------------------------------------------------------- the trainer on tool rollouts
def _trainer(tmp_path, **kw):
    from grpo_fast.train.data import task_options
    from grpo_fast.train.trainer import Trainer, TrainerConfig

    options = {
        **task_options("multiply"),
        "max_steps": 2,
        "prompts_per_step": 2,
        "num_generations": 8,
        "eval_size": 16,
        "output_dir": str(tmp_path / "run"),
        "progress": False,
        "plot": False,
        **kw,
    }
    return Trainer(TrainerConfig.from_dict(options))


def test_loss_kl_and_entropy_see_only_the_models_tokens(tmp_path):
    """Against plain torch: with the trainer's own batch, the policy loss's gradient is 0
    on every tool token, and its KL and entropy are means over the model's tokens."""
    from grpo_fast.loss import policy_loss
    from grpo_fast.train import update
    from grpo_fast.train.forward import completion_logprobs

    torch.manual_seed(0)
    trainer = _trainer(tmp_path, beta=0.04, temperature=1.0)
    batch, _ = trainer.rollout()
    comp = batch.completions
    assert comp.tool_mask is not None and any(0 in m for m in comp.tool_mask)
    shaped = update.shape(trainer, batch)
    width = shaped.packed.completion_ids.shape[1]
    # The trained tokens are exactly the sampled ones, in the sampled order.
    for i, ids in enumerate(comp.completion_ids):
        assert shaped.packed.completion_ids[i, : len(ids)].tolist() == ids
    tool = np.zeros((len(comp), width), bool)
    own = np.zeros((len(comp), width), bool)
    for i, m in enumerate(comp.tool_mask):
        tool[i, : len(m)] = ~np.array(m, bool)
        own[i, : len(m)] = np.array(m, bool)
    assert (shaped.loss_mask.numpy() == own).all()
    logp, entropy = completion_logprobs(trainer.model, shaped.packed)
    ref = (logp.detach() + 0.1 * torch.randn_like(logp)).requires_grad_(False)
    adv = torch.as_tensor(np.where(np.arange(len(comp)) % 2, 1.0, -1.0), dtype=torch.float32)
    loss, metrics = policy_loss(
        logp,
        logp.detach(),
        adv,
        shaped.loss_mask,
        trainer.loss_options,
        ref_logp=ref,
        entropy=entropy.detach(),
    )
    (grad,) = torch.autograd.grad(loss, logp)
    assert (grad.numpy()[tool] == 0).all() and (grad.numpy()[own] != 0).all()
    d = (ref - logp.detach()).numpy()
    k3 = np.exp(d) - d - 1  # Schulman's k3, over the model's tokens only
    assert metrics["kl_mean"] == pytest.approx(k3[own].mean(), rel=1e-4)
    assert metrics["entropy_mean"] == pytest.approx(entropy.detach().numpy()[own].mean(), rel=1e-4)


def test_trainer_logs_tool_metrics(tmp_path):
    trainer = _trainer(tmp_path)
    record = trainer.step()
    for name in ("tools/call_frequency", "tools/failure_frequency", "tools/episodes_with_call"):
        assert name in record
    calls = trainer.last_batch.completions.episodes.tool_calls
    assert record["tools/call_frequency"] == pytest.approx(np.mean(calls))
    assert record["tools/episodes_with_call"] == pytest.approx(np.mean(np.array(calls) > 0))


# ---------------------------------------------------------------- environments
class Tally:
    """An environment whose one tool is ``calc`` (the only call the tiny vocabulary can
    write): it counts its calls; the reward is the count plus the row's offset."""

    instances: list[Tally] = []

    def __init__(self):
        self.calls, self.offset = 0, None
        Tally.instances.append(self)

    def reset(self, **row):
        self.calls, self.offset = 0, float(row["offset"])

    def calc(self, expression: str) -> str:
        """Count the call.

        Args:
            expression: anything
        """
        self.calls += 1
        return str(self.calls)

    def get_reward(self) -> float:
        return self.calls + self.offset


def test_environment_per_rollout_state_and_reward(tok):
    from grpo_fast.run_rewards import RunRewards
    from grpo_fast.tools.rollouts import environment_rewards

    eos = tok.eos_token_id
    first = enc(tok, CALL % "1") + [eos]
    backend = Scripted(tok, first, [first, first] + [enc(tok, "7") + [eos]] * 2)
    sampler = ToolSampler(backend, tok, environment_factory=Tally, max_tool_calls=4)
    assert sampler.wants_rows and [s["function"]["name"] for s in sampler.schemas] == ["calc"]
    rows = [{"prompt": "1*1=", "answer": "1", "offset": 10}]
    Tally.instances.clear()
    out = sampler.sample(["1*1="], 2, SamplingParams(max_new_tokens=60), rows=rows)
    envs = out.episodes.environments
    assert len(envs) == 2 and envs[0] is not envs[1]
    assert [e.calls for e in envs] == [2, 2] == out.episodes.tool_calls
    # Each rollout's tool results come from its own object: 1, then 2.
    pairs = zip(out.completion_ids[0], out.tool_mask[0], strict=True)
    tool_text = tok.decode([t for t, m in pairs if not m])
    assert tool_text == "<tool_response>1</tool_response><tool_response>2</tool_response>"
    rewards = RunRewards.build(environment_rewards(Tally), max_new_tokens=60)
    assert rewards.names == ("Tally",)
    scored = rewards.score(
        out.texts, [{**rows[0], "environments": e} for e in envs], completion_ids=None
    )
    assert scored.total.tolist() == [12.0, 12.0]
    with pytest.raises(InvalidInputError, match="dataset row"):
        sampler.sample(["1*1="], 2, SamplingParams(max_new_tokens=60))

    class Talks(Tally):
        def reset(self, **row):
            return "You have 3 guesses."

    talks = ToolSampler(Scripted(tok, first, []), tok, environment_factory=Talks)
    with pytest.raises(InvalidInputError, match="Talks.reset returned str"):
        talks.sample(["1*1="], 2, SamplingParams(max_new_tokens=60), rows=rows)


def test_guessing_game():
    from grpo_fast.tools.environments import GuessingGame

    g = GuessingGame()
    g.reset(answer="64")
    assert [g.guess(x) for x in (50, 75, 62, 63, 65, 64)][-1] == "correct"
    assert g.get_reward() == pytest.approx(0.9)
    assert Toolbox([g.guess]).names == ["guess"]


def test_train_the_multiply_task_from_the_command_line(tmp_path, capsys):
    """``grpo-fast train --task multiply``: the calc tool from the task's options, its
    metrics in the log; a --tool that cannot be imported or has no schema exits 2."""
    from grpo_fast.cli import main
    from grpo_fast.train.tracking import read_metrics

    out = tmp_path / "run"
    argv = ["train", "--task", "multiply", "--max-steps", "2", "--prompts-per-step", "2"]
    argv += ["--eval-size", "8", "--output-dir", str(out), "--no-plot", "--no-progress"]
    assert main(argv) == 0
    records = read_metrics(out / "metrics.jsonl")
    assert 0 <= records[1]["tools/call_frequency"] <= 4
    said = capsys.readouterr().out
    assert "held-out accuracy" in said and "rollouts that call a tool: " in said
    assert "| tool_calls " in said  # the step's log line
    rc = main(["train", "--task", "multiply", "--tool", "grpo_fast.tools:nope", "-o", str(out)])
    assert rc == 2 and "cannot import" in capsys.readouterr().err
    rc = main(["train", "--task", "multiply", "--tool", "json:dumps", "-o", str(out)])
    assert rc == 2 and "tool 'dumps'" in capsys.readouterr().err


def test_async_rollouts_with_tools(tmp_path):
    trainer = _trainer(tmp_path, async_rollouts=True)
    history = trainer.train()
    assert [r["step"] for r in history] == [0, 1, 2]
    assert "tools/call_frequency" in history[-1] and "sample/staleness_mean" in history[-1]


def test_same_seed_same_episodes(tmp_path):
    a = _trainer(tmp_path / "a").rollout()[0].completions
    b = _trainer(tmp_path / "b").rollout()[0].completions
    assert a.completion_ids == b.completion_ids and a.tool_mask == b.tool_mask


class Counter:
    """A calc-shaped environment for the trainer: it answers every call with the product
    and counts its calls; the reward is the count."""

    def reset(self, **row):
        self.calls = 0

    def calc(self, expression: str) -> str:
        """Multiply.

        Args:
            expression: a product, e.g. 23*17
        """
        self.calls += 1
        return calc(expression)

    def get_reward(self) -> float:
        return float(self.calls)


def test_trainer_with_an_environment(tmp_path):
    trainer = Trainer_with(tmp_path / "env", environment_factory=Counter)
    assert trainer.rewards.names == ("math", "Counter")
    record = trainer.step()
    calls = trainer.last_batch.completions.episodes.tool_calls
    assert record["rewards/Counter/mean"] == pytest.approx(np.mean(calls))
    assert record["tools/call_frequency"] == pytest.approx(np.mean(calls))


def test_trainer_with_a_rollout_func(tmp_path):
    seen = []

    def rollout(prompts, trainer):
        seen.append(list(prompts))
        out = trainer.sampler.backend.sample(prompts, 8, SamplingParams(max_new_tokens=4))
        return {
            "prompt_ids": out.prompt_ids,
            "completion_ids": out.completion_ids,
            "logprobs": None,
            "tool_mask": [[1] * len(c) for c in out.completion_ids],
        }

    trainer = Trainer_with(tmp_path, rollout_func=rollout, tool=())
    record = trainer.step()
    assert len(seen[-1]) == 2 and np.isfinite(record["loss"])
    assert trainer.last_batch.completions.tool_mask is not None


def Trainer_with(tmp_path, **kw):  # noqa: N802 - reads as the class it builds
    from grpo_fast.train.data import task_options
    from grpo_fast.train.trainer import Trainer, TrainerConfig

    options = {
        **task_options("multiply"),
        "tool": kw.pop("tool", ()),
        "max_steps": 1,
        "prompts_per_step": 2,
        "num_generations": 8,
        "eval_size": 8,
        "output_dir": str(tmp_path / "run"),
        "progress": False,
        "plot": False,
    }
    return Trainer(TrainerConfig.from_dict(options), **kw)


def test_a_tool_that_raises_never_ends_the_run(tmp_path):
    def calc(expression: str) -> str:
        """Fail.

        Args:
            expression: anything
        """
        raise OSError("the calculator is broken")

    torch.manual_seed(0)
    trainer = Trainer_with(tmp_path, tools=[calc])
    record = trainer.step()
    episodes = trainer.last_batch.completions.episodes
    assert sum(episodes.tool_calls) > 0 and episodes.tool_errors == episodes.tool_calls
    assert record["tools/failure_frequency"] == 1.0 and np.isfinite(record["loss"])
