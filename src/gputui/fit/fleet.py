"""`gputui fit MODELS --prometheus URL`: which GPUs of the cluster can run each model right now.

Free memory is what the fleet's exporters report (DCGM_FI_DEV_FB_FREE), so
"right now" means as of the last scrape; the estimate itself is gputui.fit's
`check` (gputui.fit.entry, the one entry the local `fit` uses), in the precision asked for or the one gputui recommends for
that GPU's architecture. Ranked: GPUs where the model fits at its batch size
first, then by the largest batch that fits in the free memory, then by free
memory. Down hosts and lost GPUs are not candidates. A GPU in MIG mode
(dcgm-exporter's `GPU_I_ID` / `GPU_I_PROFILE` series) is one candidate per MIG
instance, with the instance's memory (sources/prometheus/mig.py).

The answer depends only on what estimate_key holds (card, architecture, memory,
free memory, MIG profile), and a fleet repeats the same card with the same free
memory many times: the engine runs once per key and the ranking is built from the
keys' answers (fleet_rank.py); the output groups them (fit/report/fleet.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gputui.fit.fleet_rank import KeyAnswer, KeyTargets, Ranking, key_targets
from gputui.model.cluster import ClusterHost, ClusterSnapshot, MigReading, MigReadings


@dataclass(frozen=True, slots=True)
class LayerAnswer:
    """A layer model's answer on one (card, free memory) key, shared by its GPUs."""

    precision: str
    batch_size: int
    peak_bytes: int
    fits: bool
    max_batch_free: int


@dataclass(frozen=True, slots=True)
class FleetFit:
    host: ClusterHost
    target: Any  # gputui.fit.core.target.Target
    precision: str
    batch_size: int
    peak_bytes: int
    fits: bool
    max_batch_free: int


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


def rank_fleet(
    cluster: ClusterSnapshot,
    model: Any,
    catalog: Any,
    *,
    batch_size: int | None = None,
    precision: str | None = None,
    targets: list[tuple[ClusterHost, Any]] | None = None,
    keyed: list[KeyTargets] | None = None,
) -> Ranking[FleetFit]:
    """Every fleet GPU for one layer model, ranked: GPUs where it fits at its batch size
    first, then by the largest batch that fits now, then by free memory. The check of a
    (card, free memory) key (estimate_key) is made once, its answer shared by every GPU
    with that key."""
    from gputui.fit.core.precision import recommend
    from gputui.fit.entry import FitRequest, check

    keyed = (
        keyed
        if keyed is not None
        else fleet_keys(targets if targets is not None else mig_fleet_targets(cluster, catalog))
    )
    answers = []
    for k in keyed:
        target = k.target
        name = precision or recommend(target.architecture, model.mode)[0]
        request = FitRequest(model, (target,), batch_size=batch_size, precision=name)
        est = check(request).checks[0].chosen
        fits = est.verdict_free is not None and est.verdict_free != "does not fit"
        free_batch = est.max_batch_size_free or 0
        answer = LayerAnswer(est.precision, est.batch_size, est.peak_bytes, fits, free_batch)
        order = (not fits, -free_batch, -(target.memory_free or 0))
        answers.append(KeyAnswer(order, k, answer))
    return Ranking(
        answers,
        lambda h, t, a: FleetFit(
            h, t, a.precision, a.batch_size, a.peak_bytes, a.fits, a.max_batch_free
        ),
    )


def fleet_keys(targets: list[tuple[ClusterHost, Any]]) -> list[KeyTargets]:
    """The targets grouped by estimate_key: made once, shared by every model's ranking."""
    return key_targets(targets, estimate_key)


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
class FleetTransformerFit:
    host: ClusterHost
    target: Any  # gputui.fit.core.target.Target
    estimate: Any  # gputui.fit.transformer.estimate.Estimate (of the first GPU of its key)


def rank_fleet_transformer(
    targets: list[tuple[ClusterHost, Any]],
    model: Any,
    workload_for: Any,
    *,
    keyed: list[KeyTargets] | None = None,
) -> Ranking[FleetTransformerFit]:
    """Every fleet GPU for one transformer, ranked as rank_fleet; `workload_for(target)`
    gives its workload. The estimate of a key (estimate_key) is computed once and shared
    by every GPU with that key: its `target` is the first of them, its figures every one's."""
    from gputui.fit.entry import FitRequest, check
    from gputui.fit.transformer.spec import TransformerSpec

    keyed = keyed if keyed is not None else fleet_keys(targets)
    answers = []
    for k in keyed:
        target = k.target
        spec = TransformerSpec(model.name, model, workload_for(target))
        est = check(FitRequest(spec, (target,))).checks[0].estimate
        order = (not est.fits_now, -(est.max_batch_size_free or 0), -(target.memory_free or 0))
        answers.append(KeyAnswer(order, k, est))
    return Ranking(answers, FleetTransformerFit)


@dataclass(frozen=True, slots=True)
class FleetAnswer:
    """The fleet's answer for every model: each layer model's and transformer's ranking of
    the fleet's GPUs, and whether every model fits on some GPU now."""

    cluster: ClusterSnapshot
    layer: tuple[tuple[Any, Ranking[FleetFit]], ...]  # (ModelSpec, its ranking)
    transformers: tuple[
        tuple[str, Any, Ranking[FleetTransformerFit]], ...
    ]  # (name, model, ranking)
    all_fit: bool


def answer_fleet(
    cluster: ClusterSnapshot,
    mig: MigReadings,
    models: Any,
    transformers: tuple[tuple[str, Any, Any], ...] = (),
    *,
    batch_size: int | None = None,
    precision: str | None = None,
) -> FleetAnswer:
    """Every model on the fleet as read (`cluster` and its `mig` readings).

    `transformers`: (name, TransformerModel, workload_for(target)) for each transformer;
    rendered by fit.report.fleet, printed by the command."""
    from gputui.catalog import load_catalog

    catalog = load_catalog()
    keyed = fleet_keys(mig_fleet_targets(cluster, catalog, mig))
    ranked = tuple(
        (
            m,
            rank_fleet(
                cluster, m, catalog, batch_size=batch_size, precision=precision, keyed=keyed
            ),
        )
        for m in models
    )
    llm = tuple(
        (name, model, rank_fleet_transformer([], model, wl, keyed=keyed))
        for name, model, wl in transformers
    )
    ok = all(any(a.answer.fits for a in fits.answers) for _, fits in ranked)
    ok = ok and all(any(a.answer.fits_now for a in fits.answers) for _, _, fits in llm)
    return FleetAnswer(cluster, ranked, llm, ok)
