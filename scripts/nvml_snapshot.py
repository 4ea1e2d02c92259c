#!/usr/bin/env python3
"""Poll NvmlSource and print the last snapshot as JSON (the shape of `gputui snapshot --json`).

Used by nvml_check.py where one poll is not enough (a GPU lost after N seconds)
and as a stand-in while `gputui snapshot --json` is unusable.

With --text, the last poll is printed as `gputui snapshot`'s text table, from
a full poll with the dashboard's psutil host sampler: nvml_check.py compares
it with `gputui snapshot`, which asks NVML only for what the table prints and
reads the host from /proc.

    nvml_snapshot.py [--polls N] [--interval S] [--no-host] [--text]
"""

from __future__ import annotations

import argparse
import json
import time

from gputui.render.snapshot_json import snapshot_to_dict
from gputui.sources.nvml.source import NvmlSource


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--polls", type=int, default=1)
    ap.add_argument("--interval", type=float, default=0.0)
    ap.add_argument("--no-host", action="store_true")
    ap.add_argument("--text", action="store_true", help="the text table instead of JSON")
    args = ap.parse_args()
    if args.text:
        # An independent reading of the host: psutil's sampler (sources/host/source.py) instead
        # of the /proc reader NvmlSource uses on Linux, which `gputui snapshot` is checked on.
        from gputui.sources.host.source import HostSampler
        from gputui.sources.nvml import source as nvml

        nvml._open_host_sampler = HostSampler  # type: ignore[assignment]
    source = NvmlSource.open(with_host=not args.no_host)
    try:
        snap = source.poll()
        for _ in range(args.polls - 1):
            time.sleep(args.interval)
            snap = source.poll()
        if args.text:  # CPU measured over a window, as `gputui snapshot` measures it
            from gputui.commands.snapshot import CPU_WINDOW_S

            time.sleep(CPU_WINDOW_S)
            snap = source.host_again(snap)
    finally:
        source.close()
    if args.text:
        from gputui.render.snapshot_text import render
        from gputui.sources.host.exited import exited_pids

        print(render(snap, color=False, width=None, exited=exited_pids(snap)), end="")
        return 0
    print(json.dumps(snapshot_to_dict(snap), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
