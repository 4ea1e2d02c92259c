"""`--allow-longer-context` / `allow_longer_context = true`, and the bounds on every number flag.

The issue's case: `--seq-len 8192` on Llama-3-8B (context 8192) lifted the cap
and answered a "longest prompt" of 269,798 tokens. A prompt + new tokens beyond
the model's context is now refused unless asked for, and then the answer says
it is beyond the trained context.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_fit

ROOT = Path(__file__).resolve().parents[3]
LLAMA3 = str(ROOT / "examples/llm/llama-3-8b.json")
GPT2 = str(ROOT / "examples/llm/gpt2.json")


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_a_prompt_beyond_the_context_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run_fit(capsys, LLAMA3, "--seq-len", "8192", "--gpu", "RTX 3090")
    assert rc == 2 and not out
    assert one_line(err) == (
        "gputui: --seq-len: 8192 + 256 new tokens = 8448 is beyond the model's context of 8192 "
        "tokens (max_position_embeddings); --allow-longer-context estimates it anyway"
    )
    rc, _, err = run_fit(capsys, LLAMA3, "--seq-len", "8000", "--new-tokens", "500", "--gpu", "T4")
    assert rc == 2 and one_line(err).startswith("gputui: --new-tokens: 8000 + 500 new tokens")
    rc, _, err = run_fit(capsys, LLAMA3, "--mode", "train", "--seq-len", "16384", "--gpu", "T4")
    assert rc == 2 and "--seq-len: 16384 is beyond the model's context of 8192" in err


def test_within_the_context_the_longest_answer_stays_within_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, _ = run_fit(capsys, LLAMA3, "--seq-len", "7936", "--gpu", "H100 SXM5 80GB", "--json")
    est = json.loads(out)["models"][0]["estimates"][0]
    assert rc == 0 and est["longest_context"] <= 8192 and est["longest_capped_by_model"]


def test_asked_for_it_is_estimated_and_said_to_be_beyond(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, _ = run_fit(
        capsys, LLAMA3, "--seq-len", "8192", "--allow-longer-context", "--gpu", "RTX 3090"
    )
    assert rc in (0, 1)
    assert "beyond the trained context of 8,192 tokens" in out
    rc, out, _ = run_fit(
        capsys, LLAMA3, "--seq-len", "8192", "--allow-longer-context", "--gpu", "RTX 3090",
        "--json",
    )  # fmt: skip
    est = json.loads(out)["models"][0]["estimates"][0]
    assert est["longest_context"] > 8192
    assert any("beyond the trained context" in w for w in est["warnings"])


def test_a_learned_position_table_has_no_longer_context(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, _, err = run_fit(
        capsys, GPT2, "--seq-len", "1000", "--new-tokens", "100", "--allow-longer-context",
        "--gpu", "T4",
    )  # fmt: skip
    assert rc == 2
    assert "1000 + 100 new tokens = 1100 is beyond the model's learned position table" in err


def test_the_toml_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = (
        '[[model]]\nname = "l"\nkind = "transformer"\n'
        f'hf_config = "{LLAMA3}"\nmode = "generate"\nseq_len = 16000\n'
    )
    path = tmp_path / "models.toml"
    path.write_text(table)
    rc, _, err = run_fit(capsys, str(path), "--gpu", "RTX 3090")
    assert rc == 2 and "model 'l': seq_len: 16000 is beyond the model's context" in one_line(err)
    assert "allow_longer_context = true estimates it anyway" in err
    path.write_text(table + "allow_longer_context = true\n")
    rc, out, err = run_fit(capsys, str(path), "--gpu", "H100 SXM5 80GB", "--json")
    assert rc in (0, 1), err
    (entry,) = json.loads(out)["models"]
    assert entry["workload"]["seq_len"] == 16000
    path.write_text(table.replace("16000", "4000"))
    rc, _, err = run_fit(capsys, str(path), "--seq-len", "9000", "--gpu", "T4")
    assert rc == 2 and "beyond the model's context of 8192" in err
    rc, _, err = run_fit(
        capsys, str(path), "--seq-len", "9000", "--allow-longer-context", "--gpu", "T4"
    )
    assert rc in (0, 1), err
    path.write_text(table + 'allow_longer_context = "yes"\n')
    rc, _, err = run_fit(capsys, str(path), "--gpu", "T4")
    assert rc == 2 and "allow_longer_context: must be true or false" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--batch-size", str(1 << 21)], "--batch-size: 2097152 is over the bound 1048576"),
        (["--seq-len", str(1 << 28), "--allow-longer-context"],
         "--seq-len: 268435456 is over the bound 134217728"),
        (["--new-tokens", str(1 << 28), "--allow-longer-context"],
         "--new-tokens: 268435456 is over the bound 134217728"),
        (["--mode", "train", "--lora-rank", str(1 << 17)], "--lora-rank: 131072 is over the bound"),
        (["--mode", "train", "--gpus", "100000"], "--gpus: 100000 is over the bound 65536"),
        (["--mode", "train", "--grad-accum", str(1 << 21)], "--grad-accum: 2097152 is over"),
        (["--paged", str(1 << 21)], "--paged: 2097152 is over the bound 1048576"),
        (["--prefill-chunk", str(1 << 28)], "--prefill-chunk: 268435456 is over the bound"),
        (["--mode", "train", "--lora-rank", "8", "--lora-alpha", "inf"],
         "--lora-alpha: must be a positive finite number, got inf"),
    ],
)  # fmt: skip
def test_every_number_flag_is_bounded(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    rc, out, err = run_fit(capsys, LLAMA3, "--gpu", "RTX 3090", *argv)
    assert rc == 2 and not out
    assert one_line(err).startswith(f"gputui: {message}")


def test_the_flag_is_for_transformers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "models.toml"
    path.write_text(
        '[[model]]\nname = "mlp"\ninput_shape = [16]\nlayers = [{ type = "Dense", units = 4 }]\n'
    )
    rc, _, err = run_fit(capsys, str(path), "--allow-longer-context", "--gpu", "T4")
    assert rc == 2 and "--allow-longer-context: applies to transformer models" in err


def test_no_known_context_says_where_the_search_stopped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Without max_position_embeddings the longest-prompt search ends at its own ceiling:
    that ceiling was printed as the answer ("longest prompt: 4,194,048 tokens")."""
    # an explicit null: an absent key takes LlamaConfig's default, 2,048, as in transformers
    tiny = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100,
            "max_position_embeddings": None}  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps(tiny))
    rc, out, _ = run_fit(capsys, str(path), "--gpu", "H100 SXM5 80GB")
    assert rc == 0
    longest = next(line for line in out.splitlines() if "longest prompt" in line)
    assert ": at least " in longest
    assert "names no maximum context" in out
    rc, out, _ = run_fit(capsys, str(path), "--gpu", "H100 SXM5 80GB", "--json")
    estimate = json.loads(out)["models"][0]["estimates"][0]
    assert estimate["longest_at_search_limit"] is True
    rc, out, _ = run_fit(capsys, LLAMA3, "--gpu", "H100 SXM5 80GB")
    assert ": at least " not in out and "names no maximum context" not in out
