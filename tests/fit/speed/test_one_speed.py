"""One speed answer and one missing-figure policy for every model kind (fit.core.speed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputui.catalog import load_catalog
from gputui.catalog.catalog import Catalog
from gputui.catalog.models import Card
from gputui.fit.core.speed import Speed
from gputui.fit.graph.step_ops import model_speed
from gputui.fit.importers.hfkeys import from_hf_dict
from gputui.fit.importers.modelsfile import parse_models
from gputui.fit.transformer.model import TransformerModel, from_config
from gputui.fit.transformer.workload import Workload
from gputui.fit.transformer.workload_speed import workload_speed
from tests.conftest import run_fit

ROOT = Path(__file__).resolve().parents[3]
LLAMA3 = ROOT / "examples/llm/llama-3-8b.json"


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def llama() -> TransformerModel:
    return from_config(from_hf_dict(json.loads(LLAMA3.read_text())), "llama-3-8b", str(LLAMA3))


def without_bf16(cat: Catalog) -> Card:
    """An RTX 4090 whose catalog entry lacks the bf16 figure (its fp16 one is known)."""
    card = cat.find("RTX 4090")
    assert card is not None and card.fp16_tensor_tflops is not None
    return card.model_copy(update={"bf16_tensor_tflops": None})


def test_a_transformer_never_borrows_another_precisions_figure(cat: Catalog) -> None:
    """The bf16 figure is missing where the hardware runs bf16: unknown with the reason,
    and a floor it is sure to reach; not the fp16 figure passed off as the speed."""
    card = without_bf16(cat)
    arch = cat.architectures[card.architecture]
    s = workload_speed(llama(), Workload(mode="generate", seq_len=512), card, 1, arch)
    assert isinstance(s, Speed)
    assert s.precision == "bf16" and not s.phases
    assert s.decode_tokens_per_s is None and s.prefill_tokens_per_s is None
    assert s.unknown_reason is not None and "bf16" in s.unknown_reason
    assert s.floor["decode"] > 0 and s.floor["prefill"] > 0 and s.floor_basis
    full = workload_speed(
        llama(), Workload(mode="generate", seq_len=512), cat.find("RTX 4090"), 1, arch
    )
    prefill = full.prefill_tokens_per_s
    assert prefill is not None and s.floor["prefill"] < prefill  # a floor, below the real one


def test_both_kinds_answer_with_the_one_speed_and_the_same_policy(cat: Catalog) -> None:
    card = without_bf16(cat)
    arch = cat.architectures[card.architecture]
    m = parse_models(
        '[[model]]\nname = "t"\ninput_shape = [512]\noptimizer = "adam"\nmode = "train"\n'
        'layers = [ { type = "Dense", units = 512 } ]\n'
    )[0]
    layer = model_speed(m, card, "amp_bf16", 64, "train", arch)
    tokens = workload_speed(llama(), Workload(mode="train", seq_len=512), card, 1, arch)
    for s, phase in ((layer, "step"), (tokens, "train")):
        assert type(s) is Speed
        assert s.throughput(phase) is None and s.unknown_reason  # type: ignore[arg-type]
        assert s.floor[phase] > 0  # type: ignore[index]
    assert (layer.unit.word, tokens.unit.word) == ("samples", "tokens")


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("tests/fixtures/keras/mnist_convnet.json", "speed unknown: no published or derivable"),
        ("examples/llm/llama-3-8b.json", "rough speed: unknown (no published or derivable"),
    ],
)
def test_the_text_says_why_a_speed_is_unknown_and_its_floor(
    capsys: pytest.CaptureFixture[str], path: str, says: str
) -> None:
    """The RTX PRO 6000 Blackwell runs bf16 but the catalog has no bf16 figure for it."""
    code, out, _ = run_fit(capsys, str(ROOT / path), "--gpu", "RTX PRO 6000 Blackwell Workstation")
    assert code in (0, 1)
    line = next(x for x in out.splitlines() if says in x)
    assert "bf16 tensor figure" in line and "at least ~" in line
    assert "half its fp16-accumulate tensor rate" in line


@pytest.mark.parametrize(
    ("path", "phase"),
    [
        ("tests/fixtures/keras/mnist_convnet.json", "step"),
        ("examples/llm/llama-3-8b.json", "decode"),
    ],
)
def test_the_json_says_why_a_speed_is_unknown_and_its_floor(
    capsys: pytest.CaptureFixture[str], path: str, phase: str
) -> None:
    code, out, _ = run_fit(
        capsys, str(ROOT / path), "--gpu", "RTX PRO 6000 Blackwell Workstation", "--json"
    )
    assert code in (0, 1)
    speed = json.loads(out)["models"][0]["estimates"][0]["speed"]
    assert "bf16 tensor figure" in speed["unknown_reason"]
    assert speed["floor"][phase] > 0 and speed["floor_basis"]
    known = json.loads(run_fit(capsys, str(ROOT / path), "--gpu", "RTX 4090", "--json")[1])
    ok = known["models"][0]["estimates"][0]["speed"]
    assert (ok["unknown_reason"], ok["floor"], ok["floor_basis"]) == (None, {}, None)
