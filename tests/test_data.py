"""Datasets: every local format ``datasets`` reads, column mapping, conversational
prompts through the chat template, and the row checks.

The expected rows and prompt strings are written out here by hand; the files
are written with pyarrow / pandas / json, not with the code under test.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import DATA_DIR, write_jsonl

from grpo_fast.errors import InvalidInputError
from grpo_fast.train.data import check_tasks, read_rows, read_tasks

pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")
pytest.importorskip("datasets")

GSM8K = [
    {"question": "12+34=", "answer": "Add the tens and the units.\n#### 46"},
    {"question": "7+8=", "answer": "Seven and eight.\n#### 15"},
    {"question": "50+25=", "answer": "Half a hundred and a quarter.\n#### 75"},
]
#: What read_tasks must return for GSM8K with --prompt-column question (written by hand).
GSM8K_TASKS = [
    {
        "question": "12+34=",
        "answer": "Add the tens and the units.\n#### 46",
        "prompt": "12+34=",
    },
    {"question": "7+8=", "answer": "Seven and eight.\n#### 15", "prompt": "7+8="},
    {
        "question": "50+25=",
        "answer": "Half a hundred and a quarter.\n#### 75",
        "prompt": "50+25=",
    },
]


def write(path, rows):
    """``rows`` in the format of ``path``'s suffix, with that format's own writer."""
    suffix = path.suffix
    if suffix == ".jsonl":
        write_jsonl(path, rows)
    elif suffix == ".json":
        path.write_text(json.dumps(rows))
    elif suffix == ".parquet":
        pd.DataFrame(rows).to_parquet(path)
    elif suffix in (".csv", ".tsv"):
        pd.DataFrame(rows).to_csv(path, index=False, sep="\t" if suffix == ".tsv" else ",")
    elif suffix == ".arrow":
        table = pa.Table.from_pylist(rows)
        with pa.ipc.new_stream(str(path), table.schema) as w:
            w.write_table(table)
    return path


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".parquet", ".csv", ".tsv", ".arrow"])
def test_every_format_reads_the_same_rows_with_column_mapping(tmp_path, suffix):
    path = write(tmp_path / f"gsm8k{suffix}", GSM8K)
    assert read_tasks(path, prompt_column="question") == GSM8K_TASKS


def test_csv_cells_stay_text_and_numbers_become_text(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('prompt,answer,level\n"1+1=",007,3\n"a, b",2.50,x\n')
    assert read_tasks(path) == [
        {"prompt": "1+1=", "answer": "007", "level": "3"},
        {"prompt": "a, b", "answer": "2.50", "level": "x"},
    ]
    parquet = write(tmp_path / "n.parquet", [{"prompt": "1+1=", "answer": 2}])
    assert read_tasks(parquet) == [{"prompt": "1+1=", "answer": "2"}]


@pytest.mark.parametrize(
    ("suffix", "where"),
    [(".jsonl", ":2:"), (".parquet", ": row 2:"), (".csv", ": row 2:"), (".json", ": row 2:")],
)
def test_a_null_answer_names_the_file_and_row(tmp_path, suffix, where):
    rows = [{"prompt": "1+1=", "answer": "2"}, {"prompt": "2+2=", "answer": None}]
    path = write(tmp_path / f"t{suffix}", rows)
    with pytest.raises(InvalidInputError, match=rf"{path.name}{where} 'answer' is null"):
        read_tasks(path)


def test_bad_files_and_columns_are_clear_errors(tmp_path):
    with pytest.raises(InvalidInputError, match="does not exist"):
        read_tasks(tmp_path / "missing.parquet")
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet at all")
    with pytest.raises(InvalidInputError, match="cannot be read as parquet"):
        read_tasks(bad)
    path = write(tmp_path / "g.parquet", GSM8K)
    with pytest.raises(
        InvalidInputError, match=r"row 1: missing column\(s\) \['prompt'\].*--prompt-column"
    ):
        read_tasks(path)
    empty = tmp_path / "e.csv"
    empty.write_text("prompt,answer\n")
    with pytest.raises(InvalidInputError, match="is empty"):
        read_tasks(empty)


def test_conversational_prompts_are_checked():
    conv = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "1+1="}]
    assert check_tasks([{"prompt": conv, "answer": 2}]) == [{"prompt": conv, "answer": "2"}]
    for bad in ([], [{"role": "user"}], [{"role": "user", "content": 3}], ["1+1="], 7):
        with pytest.raises(InvalidInputError, match=r"rows\[0\]: 'prompt' must be a string, got"):
            check_tasks([{"prompt": bad, "answer": "2"}])


def test_score_reads_parquet_too(tmp_path, capsys):
    pytest.importorskip("torch")
    from grpo_fast.cli import main

    rows = [{"prompt": "q", "completion": c, "answer": "4"} for c in ("4", "5", "so 4")]
    path = write(tmp_path / "c.parquet", rows)
    assert main(["score", str(path)]) == 0
    got = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [g["reward"] for g in got] == [1.0, 0.0, 1.0]


# ---------------------------------------------------------------------- chat templates
@pytest.fixture
def tokenizer():
    pytest.importorskip("transformers")
    from grpo_fast.train.modeling import load_tokenizer

    return load_tokenizer(str(DATA_DIR / "tiny_adder"))


def test_the_embedded_chat_template_renders_as_written(tokenizer):
    """The embedded template: a system message and a space, then the user's text; the
    generation prompt is empty, so a one-message conversation is the plain prompt."""
    from grpo_fast.train.data import render_prompts

    user = [{"role": "user", "content": "12+34="}]
    rows = [
        {"prompt": "12+34="},
        {"prompt": user},
        {"prompt": [{"role": "system", "content": "1+1=2"}, *user]},
    ]
    assert render_prompts(rows, tokenizer) == ["12+34=", "12+34=", "1+1=2 12+34="]
    # --system-prompt: added to plain prompts and to conversations without one.
    assert render_prompts(rows, tokenizer, system_prompt="0+0=0") == [
        "0+0=0 12+34=",
        "0+0=0 12+34=",
        "1+1=2 12+34=",
    ]


def test_the_generation_prompt_is_added(tokenizer):
    from grpo_fast.train.data import render_prompts

    tokenizer.chat_template = (
        "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    rows = [{"prompt": [{"role": "user", "content": "hi"}]}, {"prompt": "there"}]
    assert render_prompts(rows, tokenizer, system_prompt="sys") == [
        "<|system|>sys<|end|><|user|>hi<|end|><|assistant|>",
        "<|system|>sys<|end|><|user|>there<|end|><|assistant|>",
    ]


def test_a_tokenizer_without_a_chat_template_is_a_clear_error(tokenizer):
    from grpo_fast.train.data import render_prompts

    tokenizer.chat_template = None
    assert render_prompts([{"prompt": "1+1="}], tokenizer) == ["1+1="]
    with pytest.raises(InvalidInputError, match=r"train\[1\]: the prompt is a conversation.*"):
        render_prompts(
            [{"prompt": "1+1="}, {"prompt": [{"role": "user", "content": "1+1="}]}],
            tokenizer,
            what="train",
        )
    with pytest.raises(InvalidInputError, match="gets a system prompt.*no chat template"):
        render_prompts([{"prompt": "1+1="}], tokenizer, system_prompt="be brief")


def test_training_on_conversations_samples_from_the_templated_prompt(make_config):
    """End to end: the sampler sees the chat-templated string, its token ids are that
    string's, and TRL-style rewards get the conversation and assistant messages."""
    pytest.importorskip("torch")
    from grpo_fast.sampling import HFSampler
    from grpo_fast.train.trainer import Trainer

    rows = [
        {"prompt": [{"role": "user", "content": f"{a}+{b}="}], "answer": str(a + b)}
        for a in (12, 23, 31)
        for b in (4, 40)
    ]

    class Recording(HFSampler):
        def sample(self, prompts, n, params):
            seen.extend(prompts)
            return super().sample(prompts, n, params)

    seen: list[str] = []
    got: list = []

    def sees_messages(completions, prompts, **columns):
        got.append((completions, prompts))
        return [0.0] * len(completions)

    trainer = Trainer(
        make_config(system_prompt="9+9=18", eval_size=2),
        train_rows=rows,
        eval_rows=rows[:2],
        rewards=["math", sees_messages],
    )
    trainer.sampler = Recording(trainer.model, trainer.tokenizer, logprobs=False)
    trainer.step()
    batch = trainer.last_batch
    expected = [f"9+9=18 {rows[i]['prompt'][0]['content']}" for i in batch.prompt_index]
    assert seen == expected
    ids = trainer.tokenizer(expected, add_special_tokens=False)["input_ids"]
    assert batch.completions.prompt_ids == [p for p in ids for _ in range(4)]
    completions, prompts = got[0]
    assert prompts == [rows[i]["prompt"] for i in batch.prompt_index for _ in range(4)]
    assert completions == [[{"role": "assistant", "content": t}] for t in batch.completions.texts]
    math = np.array(
        [
            float(t.strip() == rows[i]["answer"])
            for i, t in zip(np.repeat(batch.prompt_index, 4), batch.completions.texts, strict=True)
        ]
    )
    np.testing.assert_array_equal(batch.reward_columns["math"], math)


def test_a_gsm8k_parquet_trains_with_column_mapping(tmp_path, capsys):
    """A GSM8K-shaped file works as is: --prompt-column question, gold after '####'."""
    pytest.importorskip("torch")
    from grpo_fast.cli import main
    from grpo_fast.train.tracking import read_metrics

    rows = [
        {"question": f"{a}+{b}=", "answer": f"{a} plus {b}.\n#### {a + b}"}
        for a in (11, 23, 35, 47)
        for b in (4, 40)
    ]
    train = write(tmp_path / "train.parquet", rows)
    test = write(tmp_path / "test.csv", rows[:4])
    out = tmp_path / "out"
    argv = ["train", "--train-file", str(train), "--eval-file", str(test)]
    argv += ["--prompt-column", "question", "--output-dir", str(out), "--max-steps", "1"]
    argv += ["--prompts-per-step", "4", "--num-generations", "4", "--no-plot", "--no-progress"]
    assert main(argv) == 0
    record = read_metrics(out / "metrics.jsonl")[0]
    # The demo answers most sums of this size: golds read from '#### N' must match.
    assert record["eval_accuracy"] > 0
    assert "held-out accuracy" in capsys.readouterr().out
    # Every prompt of a step is distinct, so the step needs as many rows.
    argv[argv.index("--prompts-per-step") + 1] = "9"
    argv[argv.index("--output-dir") + 1] = str(tmp_path / "out9")
    assert main(argv) == 2
    assert "prompts_per_step (9) x 1 process(es) is more than the 8" in capsys.readouterr().err


def test_eval_reads_columns_and_conversations(tmp_path, capsys):
    pytest.importorskip("torch")
    from grpo_fast.cli import main

    rows = [
        {"question": [{"role": "user", "content": f"{a}+{a}="}], "gold": f"#### {2 * a}"}
        for a in range(10, 16)
    ]
    data = write(tmp_path / "d.json", rows)
    argv = ["eval", "--data", str(data), "--prompt-column", "question", "--answer-column", "gold"]
    assert main([*argv, "-n", "2", "--temperature", "0"]) == 0
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert report["prompts"] == 6 and report["pass@1"] > 0
    assert main([*argv[:3], "-n", "2"]) == 2
    assert "missing column(s) ['prompt', 'answer']" in capsys.readouterr().err


def test_read_rows_of_jsonl_keeps_line_numbers(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"prompt": "a", "answer": "1"}\n\n{"prompt": "b"}\n')
    with pytest.raises(InvalidInputError, match=r"t.jsonl:3: missing column"):
        read_tasks(path)
    assert read_rows(write(tmp_path / "x.parquet", [{"a": 1}])) == [{"a": 1}]
