"""`gputui fit MODELS --prometheus URL`: which GPUs of the cluster can run each model right now.

Free memory is what the fleet's exporters report (DCGM_FI_DEV_FB_FREE), so
"right now" means as of the last scrape; the estimate itself is gputui.fit's
`check` (gputui.fit.entry), asked what the local `fit` asks for that GPU, for any
model kind: the same code path for a layer model, a transformer or a front-end yet to
come (a kind's own facts, such as a transformer's longest sequence, in one nested
object). Ranked: GPUs where the model fits in the free memory first, then by the
largest batch that fits in it, then by free memory. Down hosts and lost GPUs are not candidates. A GPU in MIG mode
(dcgm-exporter's `GPU_I_ID` / `GPU_I_PROFILE` series) is one candidate per MIG
instance, with the instance's memory (sources/prometheus/mig.py).

The answer depends only on what estimate_key holds (card, architecture, memory,
free memory, MIG profile), and a fleet repeats the same card with the same free
memory many times: the engine runs once per key and the ranking is built from the
keys' answers (fleet_rank.py); the output groups them (fit/report/fleet.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from gputui.fit.fleet_rank import KeyAnswer, KeyTargets, Ranking, key_targets
from gputui.model.cluster import ClusterHost, ClusterSnapshot, MigReading, MigReadings

if TYPE_CHECKING:
    from gputui.fit.core.target import Target
    from gputui.fit.entry import FitAnswer, FitRequest
    from gputui.fit.transformer.workload import Workload


def fleet_targets(cluster: ClusterSnapshot, catalog: Any) -> list[tuple[ClusterHost, Any]]:
    """(host, fit Target) for every GPU that is up and reports its free memory.

    What targets_from_snapshot makes of each host's snapshot, built from the cluster's GPUs
    directly: a fleet repeats a few card models thousands of times, so the catalog match
    is made once per (name, memory) rather than once per GPU."""
    from gputui.catalog import Catalog
    from gputui.fit.core.target import Target

    assert isinstance(catalog, Catalog)
    matches: dict[tuple[str, int], Any] = {}
    out: list[tuple[ClusterHost, Any]] = []
    for host in cluster.hosts:
        if host.state == "down":
            continue
        for g in host.gpus:
            total = g.memory_total
            if not g.up or g.sample is None or total is None or g.sample.memory_free is None:
                continue
            key = (g.name, total // 2**20)
            match = matches.get(key)
            if match is None:
                match = matches[key] = catalog.match(g.name, key[1], None)
            target = Target(
                g.name, total, match.architecture, match.card, None, g.sample.memory_free, g.index
            )
            out.append((host, target))
    return out


def instance_targets(target: Any, readings: list[MigReading]) -> list[Any]:
    """The fit targets of a MIG GPU: one per instance, in place of the card's `target`.

    The parent's memory total for the profile advice is its catalog card's, if matched."""
    from dataclasses import replace

    from gputui.fit.core.mig import MigSlot

    out = []
    for i, r in enumerate(readings):
        slot = MigSlot(
            target.index,
            target.name,
            i,
            r.profile,
            r.gpu_instance_id,
            None,  # dcgm-exporter labels the GPU instance only
            None,
            # the card's: the reader's whole-GPU total of a MIG GPU mixes instances' series
            target.card.memory_bytes if target.card else None,
        )
        name = f"{target.name} MIG {r.profile or f'GI {r.gpu_instance_id}'}"
        out.append(
            replace(
                target,
                name=name,
                memory_total=r.memory_total,
                memory_free=r.memory_free,
                card=None,  # the card's speed is the whole GPU's, not a slice's
                compute_capability=target.compute_capability
                or (target.card.compute_capability if target.card else None),
                mig=slot,
            )
        )
    return out


def mig_fleet_targets(
    cluster: ClusterSnapshot, catalog: Any, mig: MigReadings | None = None
) -> list[tuple[ClusterHost, Any]]:
    """(host, fit Target) for every GPU that is up and reports its free memory; a GPU with
    MIG instances in `mig` (sources/prometheus/mig.py read_mig) gives one target per instance."""
    from dataclasses import replace

    out: list[tuple[ClusterHost, Any]] = []
    for host, target in fleet_targets(cluster, catalog):
        readings = (mig or {}).get((host.name, target.index))
        if readings:
            # the card by its name alone: the whole-GPU total the reader joined from the
            # instances' series is not the card's, and would miss the match
            match = catalog.match(target.name, None, target.compute_capability)
            parent = replace(
                target,
                card=match.card or target.card,
                architecture=target.architecture or match.architecture,
            )
            out += [(host, t) for t in instance_targets(parent, readings)]
        else:
            out.append((host, target))
    return out


def fleet_keys(targets: list[tuple[ClusterHost, Any]]) -> list[KeyTargets]:
    """The targets grouped by estimate_key: made once, shared by every model's ranking."""
    return key_targets(targets, estimate_key)


def card_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """An estimate_key without its free memory: what a check's choice of precision reads
    (the card, its whole memory and architecture), so it is made once per card."""
    return key[:1] + key[2:]


def estimate_key(target: Any) -> tuple[Any, ...]:
    """Everything of a target an estimate reads (not its name or its place in the fleet):
    GPUs with the same key get the same answer, so it is computed once per key."""
    mig = target.mig
    return (
        target.memory_total,
        target.memory_free,
        target.compute_capability,
        target.card.name if target.card else None,
        target.architecture.name if target.architecture else None,
        None if mig is None else (mig.profile, mig.parent_memory_total),
    )


@dataclass(frozen=True, slots=True)
class FleetModel:
    """One model to place on the fleet, of any kind: the request the local `fit` makes for
    it (its targets left empty) and, where its workload follows the GPU (a transformer's
    default precision follows the architecture), `workload_for(target)`."""

    name: str
    request: FitRequest[Any]
    workload_for: Callable[[Target], Workload] | None = None

    def on(self, target: Target) -> FitRequest[Any]:
        """The request for one GPU."""
        wl = self.workload_for(target) if self.workload_for is not None else self.request.workload
        return replace(self.request, targets=(target,), workload=wl)


@dataclass(frozen=True, slots=True)
class SequenceFacts:
    """What a model with a sequence (a transformer) adds to its answer on a GPU."""

    longest_seq_free: int  # the longest sequence (prompt, for generate) that fits now
    workload: Workload  # the workload estimated on that GPU


@dataclass(frozen=True, slots=True)
class KeyFit:
    """A model's answer on one estimate key, shared by the key's GPUs, whatever its kind:
    read from the engine's check (`chosen`, `recommended`, `batch_size`), so a new
    front-end answers here with no fleet code of its own."""

    precision: str
    mode: str
    batch_size: int
    peak_bytes: int
    fits: bool  # in the free memory now
    verdict_free: str | None
    max_batch_free: int
    sequence: SequenceFacts | None = None  # None: the kind has no sequence


@dataclass(frozen=True, slots=True)
class FleetFit:
    """One GPU's row: its host, its target and its key's answer."""

    host: ClusterHost
    target: Any  # gputui.fit.core.target.Target
    answer: KeyFit


@dataclass(frozen=True, slots=True)
class ModelFleet:
    """One model's answer across the fleet: every GPU ranked."""

    model: FleetModel
    ranking: Ranking[FleetFit]
    # the kind's own description where it has a sequence (a transformer's
    # TransformerModel), known when no GPU answered too; None for a kind without one
    sequence_model: Any = None

    @property
    def fits_somewhere(self) -> bool:
        return any(a.answer.fits for a in self.ranking.answers)


def key_fit(answer: FitAnswer[Any, Any]) -> KeyFit:
    """The fleet's reading of the engine's answer on one GPU (the request's only target)."""
    (found,) = answer.checks
    est = found.chosen
    sequence = None
    if answer.workload is not None:  # the kind estimates a workload with a sequence
        sequence = SequenceFacts(int(est.longest_seq_free or 0), answer.workload)
    return KeyFit(
        found.recommended,
        found.mode,
        found.batch_size,
        est.peak_bytes,
        est.fits_now,
        est.verdict_free,
        est.max_batch_size_free or 0,
        sequence,
    )


def rank_model(model: FleetModel, keyed: list[KeyTargets]) -> ModelFleet:
    """Every fleet GPU for one model, of any kind, ranked: GPUs where it fits now first,
    then by the largest batch that fits now, then by free memory. The engine is asked once
    per estimate key (estimate_key), its answer shared by every GPU of the key."""
    from gputui.fit.entry import check

    answers = []
    chosen: dict[tuple[Any, ...], str | None] = {}
    for k in keyed:
        request = model.on(k.target)
        card = card_key(k.key)
        if request.precision is None and chosen.get(card):
            # the check's choice on this card, made once: the choice reads no free memory
            request = replace(request, precision=chosen[card])
        answer = check(request)
        # a kind estimated per precision says which it chose (a transformer's workload says it)
        chosen.setdefault(card, getattr(answer.checks[0].chosen, "precision", None))
        fit = key_fit(answer)
        order = (not fit.fits, -fit.max_batch_free, -(k.target.memory_free or 0))
        answers.append(KeyAnswer(order, k, fit))
    # asked without a GPU (no estimate is made): the kind's description, where no GPU answered too
    described: Any = check(model.request)
    sequence_model = described.model.model if described.workload is not None else None
    return ModelFleet(model, Ranking(answers, FleetFit), sequence_model)


@dataclass(frozen=True, slots=True)
class FleetAnswer:
    """The fleet's answer for every model, and whether every one fits on some GPU now."""

    cluster: ClusterSnapshot
    models: tuple[ModelFleet, ...]
    all_fit: bool


def answer_fleet(
    cluster: ClusterSnapshot, mig: MigReadings, models: Sequence[FleetModel]
) -> FleetAnswer:
    """Every model on the fleet as read (`cluster` and its `mig` readings); rendered by
    fit.report.fleet, printed by the command."""
    from gputui.catalog import load_catalog

    keyed = fleet_keys(mig_fleet_targets(cluster, load_catalog(), mig))
    ranked = tuple(rank_model(m, keyed) for m in models)
    return FleetAnswer(cluster, ranked, all(r.fits_somewhere for r in ranked))
