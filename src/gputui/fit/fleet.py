"""`gputui fit MODELS --prometheus URL`: which GPUs of the cluster can run each model right now.

Free memory is what the fleet's exporters report (DCGM_FI_DEV_FB_FREE), so
"right now" means as of the last scrape; the estimate itself is gputui.fit's
`check` per GPU, in the precision asked for or the one gputui recommends for
that GPU's architecture. Ranked: GPUs where the model fits at its batch size
first, then by the largest batch that fits in the free memory, then by free
memory. Down hosts and lost GPUs are not candidates. A GPU in MIG mode
(dcgm-exporter's `GPU_I_ID` / `GPU_I_PROFILE` series) is one candidate per MIG
instance, with the instance's memory (sources/prometheus/mig.py).

Transformers (HF config, GGUF, `kind = "transformer"` tables) are ranked with
the estimate the local `fit` uses (gputui.fit.transformer.estimate.estimate), once per
distinct GPU and free memory: the answer depends on nothing else, and a fleet
repeats the same card with the same free memory many times.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gputui.model.cluster import ClusterHost, ClusterSnapshot, MigReading, MigReadings


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
    """(host, fit Target) for every GPU that is up and reports its free memory."""
    from gputui.catalog import Catalog
    from gputui.fit.targets import targets_from_snapshot

    assert isinstance(catalog, Catalog)
    out: list[tuple[ClusterHost, Any]] = []
    for host in cluster.hosts:
        if host.state == "down":
            continue
        for target in targets_from_snapshot(host.snapshot(cluster.timestamp), catalog):
            if target.memory_free is not None:
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
) -> list[FleetFit]:
    from gputui.fit.check import check
    from gputui.fit.core.precision import recommend

    out = []
    for host, target in targets if targets is not None else mig_fleet_targets(cluster, catalog):
        name = precision or recommend(target.architecture, model.mode)[0]
        result = check(model, target, batch_size=batch_size, precision=name)
        est = result.chosen
        free_batch = est.max_batch_size_free or 0
        fits = est.verdict_free is not None and est.verdict_free != "does not fit"
        out.append(
            FleetFit(host, target, est.precision, est.batch_size, est.peak_bytes, fits, free_batch)
        )
    out.sort(
        key=lambda f: (
            not f.fits,
            -f.max_batch_free,
            -(f.target.memory_free or 0),
            f.host.name,
            f.target.index,
            _mig_order(f.target),
        )
    )
    return out


def _mig_order(target: Any) -> int:
    return -1 if target.mig is None else int(target.mig.mig_index)


@dataclass(frozen=True, slots=True)
class FleetLlmFit:
    host: ClusterHost
    target: Any  # gputui.fit.core.target.Target
    estimate: Any  # gputui.fit.transformer.estimate.Estimate


def rank_fleet_transformer(
    targets: list[tuple[ClusterHost, Any]], model: Any, workload_for: Any
) -> list[FleetLlmFit]:
    """Every fleet GPU for one transformer; `workload_for(target)` gives its workload.

    The estimate of a (GPU, free memory) pair is computed once and reused for every GPU
    that has the same card, architecture, memory and free memory."""
    from dataclasses import replace

    from gputui.fit.transformer.estimate import estimate

    seen: dict[tuple[Any, ...], Any] = {}
    out = []
    for host, target in targets:
        key = (  # everything of a target the estimate reads (not its name or place)
            target.memory_total,
            target.memory_free,
            target.compute_capability,
            target.card.name if target.card else None,
            target.architecture.name if target.architecture else None,
        )
        est = seen.get(key)
        if est is None:
            est = seen[key] = estimate(model, workload_for(target), target)
        out.append(FleetLlmFit(host, target, replace(est, target=target)))
    out.sort(
        key=lambda f: (
            not f.estimate.fits_now,
            -(f.estimate.max_batch_size_free or 0),
            -(f.target.memory_free or 0),
            f.host.name,
            f.target.index,
            _mig_order(f.target),
        )
    )
    return out


def _gib(value: int | None) -> str:
    return "N/A" if value is None else f"{value / 2**30:.1f} GiB"


def _where(f: Any) -> str:
    where = f"{f.host.name} GPU {f.target.index}"
    return where if f.target.mig is None else f"{where} MIG {f.target.mig.label}"


def _mig_json(t: Any) -> dict[str, Any] | None:
    if t.mig is None:
        return None
    return {"profile": t.mig.profile, "gpu_instance_id": t.mig.gpu_instance_id}


def _gpu_json(f: Any) -> dict[str, Any]:
    return {
        "host": f.host.name,
        "gpu": f.target.index,
        "name": f.target.name,
        "card": f.target.card.name if f.target.card else None,
        "mig": _mig_json(f.target),
        "memory_total": f.target.memory_total,
        "memory_free": f.target.memory_free,
    }


def _advice(pairs: list[tuple[Any, int]], hosts: list[str], prefix: str) -> list[str]:
    """The MIG advice per host, for the GPUs where nothing fits now."""
    from gputui.fit.core.mig import advice_lines

    lines: list[str] = []
    for host in dict.fromkeys(hosts):
        mine = [p for p, h in zip(pairs, hosts, strict=True) if h == host]
        lines += advice_lines(mine, prefix=prefix, host=host)
    return lines


def run_fit(
    args: Any,
    models: Any,
    header: dict[str, Any],
    transformers: tuple[tuple[str, Any, Any], ...] = (),
    *,
    cluster: ClusterSnapshot,
    mig: MigReadings,
) -> int:
    """Exit 0 when every model fits on some GPU now, 1 when one fits nowhere.

    `transformers`: (name, TransformerModel, workload_for(target)) for each transformer;
    `cluster` and `mig`: the fleet as read by the command (commands/fit_fleet.py)."""
    import json

    from gputui.catalog import load_catalog
    from gputui.fit.transformer.report import model_dict, workload_dict

    catalog = load_catalog()
    targets = mig_fleet_targets(cluster, catalog, mig)
    ranked = [
        (
            m,
            rank_fleet(
                cluster,
                m,
                catalog,
                batch_size=args.batch_size,
                precision=args.precision,
                targets=targets,
            ),
        )
        for m in models
    ]
    llm = [
        (name, model, rank_fleet_transformer(targets, model, wl))
        for name, model, wl in transformers
    ]
    ok = all(any(f.fits for f in fits) for _, fits in ranked)
    ok = ok and all(any(f.estimate.fits_now for f in fits) for _, _, fits in llm)
    if args.json:
        payload = {
            **header,
            "prometheus": cluster.url,
            "timestamp": cluster.timestamp,
            "all_fit": ok,
            "fleet": [
                {
                    "model": m.name,
                    "kind": "graph",  # the fit document's kinds (docs/fit.md)
                    "gpus": [
                        {
                            **_gpu_json(f),
                            "precision": f.precision,
                            "batch_size": f.batch_size,
                            "peak_bytes": f.peak_bytes,
                            "fits": f.fits,
                            "max_batch_size_free": f.max_batch_free,
                        }
                        for f in fits
                    ],
                }
                for m, fits in ranked
            ]
            + [
                {
                    "model": name,
                    "kind": "transformer",
                    "transformer": model_dict(model),
                    "workload": workload_dict(fits[0].estimate.workload, model) if fits else None,
                    "gpus": [
                        {
                            **_gpu_json(f),
                            "peak_bytes": f.estimate.peak_bytes,
                            "fits": f.estimate.fits_now,
                            "verdict_free": f.estimate.verdict_free,
                            "max_batch_size_free": f.estimate.max_batch_size_free,
                            "longest_seq_len_free": f.estimate.longest_seq_free,
                        }
                        for f in fits
                    ],
                    "mig_advice": _advice(
                        [(f.target, f.estimate.peak_bytes) for f in fits],
                        [f.host.name for f in fits],
                        "",
                    ),
                }
                for name, model, fits in llm
            ],
        }
        print(json.dumps(payload, indent=2))
        return 0 if ok else 1
    print(f"cluster: {cluster.url} ({len(cluster.hosts)} hosts, {len(cluster.gpus)} GPUs)")
    for m, fits in ranked:
        print()
        can = [f for f in fits if f.fits]
        batch = fits[0].batch_size if fits else (args.batch_size or m.batch_size)
        print(f"{m.name} ({m.mode}, batch {batch}): fits now on {len(can)} of {len(fits)} GPUs")
        if not fits:
            print("  no GPU reports its free memory (DCGM_FI_DEV_FB_FREE)")
            continue
        width = max(len(_where(f)) for f in fits)
        for rank, f in enumerate(fits, 1):
            verdict = "fits" if f.fits else "no"
            print(
                f"  {rank:>3}. {_where(f).ljust(width)}  {f.target.name}  "
                f"free {_gib(f.target.memory_free)}  {f.precision}  peak {_gib(f.peak_bytes)}  "
                f"{verdict}  max batch now {f.max_batch_free}"
            )
        pairs = [(f.target, f.peak_bytes) for f in fits]
        for line in _advice(pairs, [f.host.name for f in fits], "  "):
            print(line)
    for name, model, llm_fits in llm:
        print()
        print(_llm_lines(name, model, llm_fits))
    return 0 if ok else 1


def _llm_lines(name: str, model: Any, fits: list[FleetLlmFit]) -> str:
    from gputui.fit.transformer.report import workload_line

    can = [f for f in fits if f.estimate.fits_now]
    lines = [f"{name} (transformer): fits now on {len(can)} of {len(fits)} GPUs"]
    if not fits:
        lines.append("  no GPU reports its free memory (DCGM_FI_DEV_FB_FREE)")
        return "\n".join(lines)
    lines.append("  " + workload_line(fits[0].estimate.workload, model))
    width = max(len(_where(f)) for f in fits)
    for rank, f in enumerate(fits, 1):
        e = f.estimate
        verdict = "fits" if e.fits_now else "no"
        lines.append(
            f"  {rank:>3}. {_where(f).ljust(width)}  {f.target.name}  "
            f"free {_gib(f.target.memory_free)}  peak {_gib(e.peak_bytes)}  {verdict}  "
            f"max batch now {e.max_batch_size_free or 0}  longest seq now {e.longest_seq_free or 0:,}"
        )
    lines += _advice(
        [(f.target, f.estimate.peak_bytes) for f in fits], [f.host.name for f in fits], "  "
    )
    return "\n".join(lines)
