"""fit/entry.py: one entry, check(FitRequest), answers for a layer model and a transformer."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gputui.catalog import load_catalog
from gputui.fit import FitRequest, ModelCheck, TransformerCheck, check
from gputui.fit.core.target import card_target
from gputui.fit.graph.estimate import check as check_graph
from gputui.fit.graph.spec import ModelSpec
from gputui.fit.importers.modelsfile import load_models
from gputui.fit.transformer.estimate import estimate
from gputui.fit.transformer.spec import TransformerSpec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "models.toml"


def _one_of_each() -> tuple[ModelSpec, TransformerSpec]:
    models = load_models(EXAMPLES)
    layer = next(m for m in models if isinstance(m, ModelSpec))
    llm = next(m for m in models if isinstance(m, TransformerSpec))
    return layer, llm


def test_one_entry_checks_either_kind_as_its_engine_does() -> None:
    layer, llm = _one_of_each()
    catalog = load_catalog()
    card = next(c for c in catalog.cards if c.memory_bytes >= 40 * 2**30)
    target = card_target(card, dict(catalog.architectures))

    (got,) = check(FitRequest(layer, (target,), precision="bf16")).checks
    assert isinstance(got, ModelCheck)
    assert got == check_graph(layer, target, precision="bf16")

    (answer,) = check(FitRequest(llm, (target,))).checks
    assert isinstance(answer, TransformerCheck)
    assert answer.chosen == estimate(llm.model, llm.workload, target)
    # both kinds answer under the same names, with one breakdown type
    for result in (got, answer):
        assert result.chosen.breakdown.total == result.chosen.peak_bytes > 0
        assert result.chosen.verdict in ("fits", "tight", "does not fit")
    assert "kv_cache" not in got.chosen.breakdown.as_dict()
    assert "kv_cache" in answer.chosen.breakdown.as_dict()


def test_one_entry_ranks_either_kind() -> None:
    layer, llm = _one_of_each()
    catalog = load_catalog()
    layer_ranked = check(FitRequest(layer, catalog=catalog)).ranked
    llm_ranked = check(FitRequest(llm, catalog=catalog)).ranked
    assert len(layer_ranked) == len(llm_ranked) == len(catalog.cards)
    for ranked in (layer_ranked, llm_ranked):
        fits = [r.estimate.fits for r in ranked]
        assert fits == sorted(fits, reverse=True)  # the cards that fit come first


def test_both_kinds_read_fits_and_fits_now_alike() -> None:
    layer, llm = _one_of_each()
    catalog = load_catalog()
    card = max(catalog.cards, key=lambda c: c.memory_bytes)
    busy = replace(card_target(card, dict(catalog.architectures)), memory_free=1 << 20)
    answers = (
        check(FitRequest(layer, (busy,), precision="bf16")),
        check(FitRequest(llm, (busy,))),
    )
    for result in (a.checks[0] for a in answers):
        e = result.chosen
        assert e.fits and not e.fits_now  # fits the card, not the 1 MiB left free now
        assert e.verdict_free == "does not fit" and e.peak_bytes == e.breakdown.total
