"""`gputui check`: exit 0 when the GPUs are fit to take a job, 1 (with the reason) when not.

For cron jobs and Slurm prologs: one poll, one line on stdout, no Textual. NVML by
default and never a silent fallback to simulated GPUs (a prolog must not pass on
pretend hardware); `--source simulated` is for trying it out.
"""

from __future__ import annotations

import argparse
from typing import Any

from gputui.commands import path_arg

MAX_TEMP_C = 200.0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "check",
        help="exit 0 if the GPUs are ready (free memory, temperature), else 1 with the reason",
        description=(
            "Poll the GPUs once and exit 0 when every GPU checked is readable and meets the "
            "limits, else 1 with one line saying why (for cron jobs and Slurm prologs); "
            "2 on bad options. A value a limit needs and the GPU cannot report fails it."
        ),
    )
    p.add_argument(
        "--min-free", metavar="SIZE", help="at least this much free memory (e.g. 20GiB, 512MiB)"
    )
    p.add_argument("--max-temp", metavar="C", help="at most this temperature, degrees Celsius")
    p.add_argument("--gpu", metavar="N", help="only the GPU with NVML index N")
    p.add_argument(
        "--source",
        choices=("nvml", "simulated", "demo"),
        default="nvml",
        help="nvml (default) or simulated GPUs from a scenario, to try the command out",
    )
    p.add_argument("--scenario", type=path_arg, metavar="FILE", help="with --source simulated")
    p.set_defaults(run=run)


def _limits(args: argparse.Namespace) -> tuple[int | None, float | None, int | None]:
    import math

    from gputui.core.errors import UserError
    from gputui.core.quantities import parse_size
    from gputui.core.textsafe import visible

    min_free = None if args.min_free is None else parse_size(args.min_free, "--min-free")
    max_temp = None
    if args.max_temp is not None:
        try:
            max_temp = float(args.max_temp)
        except ValueError:
            max_temp = math.nan
        if not -MAX_TEMP_C <= max_temp <= MAX_TEMP_C:
            raise UserError(
                f"--max-temp: {visible(args.max_temp)[:40]!r} is not a temperature "
                f"(-{MAX_TEMP_C:g} to {MAX_TEMP_C:g} °C)"
            )
    gpu = None
    if args.gpu is not None:
        text = args.gpu.strip()
        if not (text.isascii() and text.isdigit()) or len(text) > 4:
            raise UserError(f"--gpu: {visible(args.gpu)[:40]!r} is not a GPU index (0, 1, ...)")
        gpu = int(text)
    return min_free, max_temp, gpu


def run(args: argparse.Namespace) -> int:
    from gputui.core.errors import UserError

    min_free, max_temp, gpu = _limits(args)
    if args.scenario is not None and args.source == "nvml":
        raise UserError("--scenario: only with --source simulated")
    from gputui.sources.base import open_source
    from gputui.sources.errors import SourceUnavailable

    scenario = args.scenario
    if scenario is not None:
        from gputui.commands import checked_scenario

        scenario = checked_scenario(scenario)
    try:
        source, _ = open_source(args.source, scenario, with_host=False, detail="table")
    except SourceUnavailable as exc:
        print(f"not ready: NVML unavailable: {exc.reason}")
        return 1
    try:
        snap = source.poll()
    finally:
        source.close()
    if gpu is not None and all(d.index != gpu for d in snap.devices):
        have = ", ".join(str(d.index) for d in snap.devices) or "none"
        raise UserError(f"--gpu: no GPU {gpu} on this host (GPUs: {have})")
    from gputui.usage.readiness import judge

    verdict = judge(snap, min_free=min_free, max_temp=max_temp, gpu=gpu)
    print(verdict.line if verdict.ok else f"not ready: {verdict.line}")
    return 0 if verdict.ok else 1
