"""MIG instances of the fleet's GPUs, from dcgm-exporter's per-instance series.

In MIG mode dcgm-exporter exports a GPU's framebuffer metrics once per MIG
instance, labelled `GPU_I_ID` (the GPU instance id) and `GPU_I_PROFILE`
("3g.40gb"). The cluster reader joins series on (host, gpu) and keeps the
largest, which for fit would be one instance's free memory on the whole
card's total: wrong. A CUDA job gets one instance, so the fit targets of such
a GPU are its instances (made in fit/fleet.py), read here with one query per
metric for the whole fleet (free and used: an instance's total is their sum).
"""

from __future__ import annotations

import math
import re
from typing import Any

from gputui.core.textsafe import visible
from gputui.model.cluster import MigReading, MigReadings
from gputui.sources.prometheus.bounds import bounded, index_label
from gputui.sources.prometheus.series import host_of

MIB = 1 << 20
FREE = "DCGM_FI_DEV_FB_FREE"
USED = "DCGM_FI_DEV_FB_USED"
MIG_LABELS = "Hostname, hostname, instance, gpu, GPU_I_ID, GPU_I_PROFILE"
_PROFILE_RE = re.compile(r"^\d+g\.\d+gb(?:\+\w+)?$")


def mig_query(source: Any, metric: str) -> str:
    """`metric` for every MIG instance of the fleet: series with a GPU_I_ID label."""
    selector = source.selector(metric)
    return f'max by ({MIG_LABELS}) ({selector[:-1]}, GPU_I_ID!=""}})'


def profile_label(text: str | None) -> str | None:
    """A MIG profile name as dcgm-exporter labels it ("3g.40gb"), else None."""
    if not text:
        return None
    shown = visible(text)
    return shown if _PROFILE_RE.match(shown) else None


def read_mig(source: Any, at: float) -> MigReadings:
    """(host, gpu index) -> its MIG instances, by GPU instance id; {} without MIG series."""
    values: dict[tuple[str, int, int], dict[str, Any]] = {}
    for metric in (FREE, USED):
        for s in source.client.query(mig_query(source, metric), at=at):
            gpu = index_label(s.labels.get("gpu"))
            gi = index_label(s.labels.get("GPU_I_ID"))
            value = bounded(metric, s.value)
            if gpu is None or gi is None or math.isnan(value):
                continue
            entry = values.setdefault((host_of(s.labels), gpu, gi), {})
            entry.setdefault("profile", profile_label(s.labels.get("GPU_I_PROFILE")))
            entry.setdefault(metric, int(round(value * MIB)))
    out: MigReadings = {}
    for (host, gpu, gi), entry in sorted(values.items()):
        if FREE not in entry or USED not in entry:
            continue  # half an instance is no reading: its total is unknown
        reading = MigReading(host, gpu, gi, entry["profile"], entry[FREE], entry[USED])
        out.setdefault((visible(host), gpu), []).append(reading)
    return out
