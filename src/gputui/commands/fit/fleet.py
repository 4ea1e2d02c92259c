"""`gputui fit ... --prometheus URL`: read the fleet, then rank it (fit/fleet.py).

The reading (the checks of --prometheus/--match, one refresh, the MIG
instances) is here so fit/ takes the fleet as data and never imports a source.
"""

from __future__ import annotations

from typing import Any

# What a fit target reads of a GPU: its memory (the total is used + free + reserved where
# no gputui exporter says it). The other GPU fields (utilisation, clocks, temperature...)
# would be one query and one answer of every GPU each for nothing.
FIT_METRICS = (
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_FB_RESERVED",
    "gputui_gpu_memory_total_bytes",
)


def fleet_models(models: tuple[Any, ...], args: Any) -> tuple[Any, ...]:
    """The fleet's model (fit.fleet.FleetModel) of each description that carries its own
    workload (a layer model, whatever file or front-end made it): the request the local
    check makes, with --batch-size and --precision."""
    from gputui.fit import FitRequest
    from gputui.fit.fleet import FleetModel

    return tuple(
        FleetModel(m.name, FitRequest(m, batch_size=args.batch_size, precision=args.precision))
        for m in models
    )


def run_fit(args: Any, header: dict[str, Any], models: tuple[Any, ...]) -> int:
    """The fleet read now, answered by fit/fleet.py's answer_fleet for every model
    (fit.fleet.FleetModel, any kind) and printed through fit/report/fleet.py; the exit
    code (0 all fit, 1 one fits nowhere), or UserError for a bad or unreachable Prometheus."""
    from gputui.fit import fleet
    from gputui.fit.report.fleet import render_json, render_text
    from gputui.sources.prometheus.connect import (
        check_cluster_args,
        command_deadline,
        open_cluster_source,
        poll_or_fail,
        read_mig_or_fail,
    )

    check_cluster_args(args, {})
    deadline = command_deadline(getattr(args, "deadline", None))
    source = open_cluster_source(
        args.prometheus, getattr(args, "match", None), FIT_METRICS, deadline
    )
    cluster = poll_or_fail(source)
    mig = read_mig_or_fail(source, cluster.timestamp)
    answer = fleet.answer_fleet(cluster, mig, models)
    every = bool(getattr(args, "all", False))
    if args.json:
        print(render_json(header, answer, every=every))
    else:
        print(render_text(answer, every=every))
    return 0 if answer.all_fit else 1
