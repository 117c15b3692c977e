"""Plain prompts and chat models: the start-up warning, --chat-template, and empty
completions reported in the log and the metrics."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

CHAT = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


@pytest.fixture
def chat_tokenizer():
    from grpo_fast.train.data import DATA_DIR
    from grpo_fast.train.modeling import load_tokenizer

    tok = load_tokenizer(str(DATA_DIR / "tiny_adder"))
    tok.chat_template = CHAT
    return tok


PLAIN = [{"prompt": "12+34=", "answer": "46"}, {"prompt": "1+2=", "answer": "3"}]
CONV = [{"prompt": [{"role": "user", "content": "5+5="}], "answer": "10"}]


def test_plain_prompts_to_a_chat_template_are_warned_about(chat_tokenizer):
    from grpo_fast.train.data import plain_prompt_warning

    message = plain_prompt_warning(PLAIN + CONV, chat_tokenizer)
    assert message is not None
    assert message.startswith("2 of 3 training prompts are plain text")
    assert "--chat-template always" in message and "--system-prompt" in message
    # Conversations only, a system prompt, or an explicit mode: nothing to say.
    assert plain_prompt_warning(CONV, chat_tokenizer) is None
    assert plain_prompt_warning(PLAIN, chat_tokenizer, system_prompt="be brief") is None
    for mode in ("always", "never"):
        assert plain_prompt_warning(PLAIN, chat_tokenizer, chat_template=mode) is None
    # No template, or one that renders a user message as written: nothing to say.
    chat_tokenizer.chat_template = None
    assert plain_prompt_warning(PLAIN, chat_tokenizer) is None
    chat_tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    assert plain_prompt_warning(PLAIN, chat_tokenizer) is None


def test_chat_template_modes_render_as_documented(chat_tokenizer):
    from grpo_fast.errors import InvalidInputError
    from grpo_fast.train.data import render_prompts

    assert render_prompts(PLAIN, chat_tokenizer) == ["12+34=", "1+2="]
    assert render_prompts(PLAIN + CONV, chat_tokenizer, chat_template="always") == [
        "<|user|>12+34=\n<|assistant|>",
        "<|user|>1+2=\n<|assistant|>",
        "<|user|>5+5=\n<|assistant|>",
    ]
    assert render_prompts(PLAIN, chat_tokenizer, chat_template="never") == ["12+34=", "1+2="]
    with pytest.raises(InvalidInputError, match=r"rows\[0\]: the prompt is a conversation.*never"):
        render_prompts(CONV, chat_tokenizer, chat_template="never")
    with pytest.raises(InvalidInputError, match="--system-prompt needs the chat template"):
        render_prompts(PLAIN, chat_tokenizer, chat_template="never", system_prompt="x")
    with pytest.raises(InvalidInputError, match="chat_template must be one of"):
        render_prompts(PLAIN, chat_tokenizer, chat_template="sometimes")
    chat_tokenizer.chat_template = None
    with pytest.raises(InvalidInputError, match=r"--chat-template always.*no chat template"):
        render_prompts(PLAIN, chat_tokenizer, chat_template="always")


def test_the_trainer_warns_once_at_start_and_always_renders(make_config, chat_tokenizer, capsys):
    from grpo_fast.train.trainer import Trainer

    rows = [{"prompt": f"{a}+{b}=", "answer": str(a + b)} for a in (12, 23) for b in (4, 40)]
    trainer = Trainer(make_config(), tokenizer=chat_tokenizer, train_rows=rows, eval_rows=rows)
    err = capsys.readouterr().err
    assert err.count("4 of 4 training prompts are plain text") == 1
    assert trainer.train_prompts == [r["prompt"] for r in rows]

    trainer = Trainer(
        make_config(chat_template="always", overwrite=True),
        tokenizer=chat_tokenizer,
        train_rows=rows,
        eval_rows=rows,
    )
    assert "plain text" not in capsys.readouterr().err
    assert trainer.train_prompts == [f"<|user|>{r['prompt']}\n<|assistant|>" for r in rows]
    assert trainer.eval_prompts == trainer.train_prompts


def test_empty_completions_are_reported_in_the_log_and_the_metrics(make_config, capsys):
    from grpo_fast.sampling import Completions, HFSampler
    from grpo_fast.train.trainer import Trainer

    class Silent(HFSampler):
        """Every completion is the EOS token alone: nothing said."""

        def sample(self, prompts, n, params):
            c = super().sample(prompts, n, params)
            eos = self.tokenizer.eos_token_id
            ids = [[eos] if i % 4 else list(row) for i, row in enumerate(c.completion_ids)]
            texts = ["" if i % 4 else t for i, t in enumerate(c.texts)]
            return Completions(texts, c.prompt_ids, ids, None, c.n)

    trainer = Trainer(make_config(eval_every=0))
    trainer.sampler = Silent(trainer.model, trainer.tokenizer, logprobs=False)
    record = trainer.step()
    texts = trainer.last_batch.completions.texts
    expected = sum(not t.strip() for t in texts) / len(texts)
    assert expected > 0.5
    assert record["completions/empty_ratio"] == pytest.approx(expected)
    trainer.step()
    err = capsys.readouterr().err
    assert err.count("of the completions are empty (completions/empty_ratio)") == 1
    # An ordinary step: the ratio is there, and 0 when every completion says something.
    trainer.sampler = HFSampler(trainer.model, trainer.tokenizer, logprobs=False)
    record = trainer.step()
    texts = trainer.last_batch.completions.texts
    assert record["completions/empty_ratio"] == sum(not t.strip() for t in texts) / len(texts)
    json.dumps(record)  # the metric is a plain float
