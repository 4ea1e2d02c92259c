"""`gputui fit MODELS --prometheus URL`: which GPUs of the cluster can run each model right now.

Free memory is what the fleet's exporters report (DCGM_FI_DEV_FB_FREE), so
"right now" means as of the last scrape; the estimate itself is gputui.fit's
`check` per GPU, in the precision asked for or the one gputui recommends for
that GPU's architecture. Ranked: GPUs where the model fits at its batch size
first, then by the largest batch that fits in the free memory, then by free
memory. Down hosts and lost GPUs are not candidates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gputui.telemetry.prometheus import ClusterHost, ClusterSnapshot


@dataclass(frozen=True, slots=True)
class FleetFit:
    host: ClusterHost
    target: Any  # gputui.fit.estimate.Target
    precision: str
    batch_size: int
    peak_bytes: int
    fits: bool
    max_batch_free: int


def rank_fleet(
    cluster: ClusterSnapshot,
    model: Any,
    catalog: Any,
    *,
    batch_size: int | None = None,
    precision: str | None = None,
) -> list[FleetFit]:
    from gputui.fit.estimate import check
    from gputui.fit.precision import recommend
    from gputui.telemetry.prometheus import fleet_targets

    out = []
    for host, target in fleet_targets(cluster, catalog):
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
        )
    )
    return out


def _gib(value: int | None) -> str:
    return "N/A" if value is None else f"{value / 2**30:.1f} GiB"


def run_fit(args: Any, models: Any, header: dict[str, Any]) -> int:
    """Exit 0 when every model fits on some GPU now, 1 when one fits nowhere."""
    import json

    from gputui.catalog import load_catalog
    from gputui.telemetry.prometheus_report import (
        check_cluster_args,
        open_cluster_source,
        poll_or_fail,
    )

    check_cluster_args(args, {})
    source = open_cluster_source(args.prometheus, getattr(args, "match", None))
    cluster = poll_or_fail(source)
    catalog = load_catalog()
    ranked = [
        (m, rank_fleet(cluster, m, catalog, batch_size=args.batch_size, precision=args.precision))
        for m in models
    ]
    ok = all(any(f.fits for f in fits) for _, fits in ranked)
    if args.json:
        payload = {
            **header,
            "prometheus": cluster.url,
            "timestamp": cluster.timestamp,
            "all_fit": ok,
            "fleet": [
                {
                    "model": m.name,
                    "gpus": [
                        {
                            "host": f.host.name,
                            "gpu": f.target.index,
                            "name": f.target.name,
                            "card": f.target.card.name if f.target.card else None,
                            "memory_total": f.target.memory_total,
                            "memory_free": f.target.memory_free,
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
            ],
        }
        print(json.dumps(payload, indent=2))
        return 0 if ok else 1
    gpus = len(cluster.gpus)
    print(f"cluster: {cluster.url} ({len(cluster.hosts)} hosts, {gpus} GPUs)")
    for m, fits in ranked:
        print()
        can = [f for f in fits if f.fits]
        batch = fits[0].batch_size if fits else (args.batch_size or m.batch_size)
        print(f"{m.name} ({m.mode}, batch {batch}): fits now on {len(can)} of {len(fits)} GPUs")
        if not fits:
            print("  no GPU reports its free memory (DCGM_FI_DEV_FB_FREE)")
            continue
        width = max(len(f"{f.host.name} GPU {f.target.index}") for f in fits)
        for rank, f in enumerate(fits, 1):
            where = f"{f.host.name} GPU {f.target.index}".ljust(width)
            verdict = "fits" if f.fits else "no"
            print(
                f"  {rank:>3}. {where}  {f.target.name}  free {_gib(f.target.memory_free)}  "
                f"{f.precision}  peak {_gib(f.peak_bytes)}  {verdict}  "
                f"max batch now {f.max_batch_free}"
            )
    return 0 if ok else 1
