"""MIG labels from Prometheus (GPU_I_ID, GPU_I_PROFILE, gputui's `mig`) are outside input: any
strings in them are read as a MIG device or left out, never shown raw, never a crash; a card's
memory is the sum of the devices' values it was sent."""

from __future__ import annotations

import math

import properties
from hypothesis import given
from hypothesis import strategies as st

from gputui.core.textsafe import visible
from gputui.render.cluster_text import mig_name
from gputui.sources.prometheus.api import Sample
from gputui.sources.prometheus.assemble import assemble

TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["1", "3", "0:2", "1:2", "0:999", "0:1000", "3g.40gb", "1g.10gb+me", "-1",
                     "\x1b[2J", "٣", "0:٢", "99999999999"]),
)  # fmt: skip
VALUE = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.floats(0, 1e6))


@properties.bounded(80)
@given(
    devices=st.lists(st.tuples(TEXT, TEXT, TEXT, VALUE, VALUE), min_size=1, max_size=6),
)
def test_mig_series_are_read_or_left_out(devices: list[tuple[str, str, str, float, float]]) -> None:
    values = []
    for gi, profile, name, used, free in devices:
        labels = {"Hostname": "h", "gpu": "0", "instance": "h:1", "GPU_I_ID": gi,
                  "GPU_I_PROFILE": profile, "mig": name}  # fmt: skip
        for metric, v in (("DCGM_FI_DEV_FB_USED", used), ("DCGM_FI_DEV_FB_FREE", free)):
            values.append(Sample({**labels, "__name__": metric}, 0.0, v))
    (host,) = assemble(values, [], [], 1.0, intervals={}, known={}, gputui_instances=set())
    (gpu,) = host.gpus
    for r in gpu.mig:
        assert r.gpu == 0 and 0 <= r.gpu_instance_id < 10**9
        assert r.mig_index is None or 0 <= r.mig_index < 1000
        assert r.profile is None or r.profile == visible(r.profile)
        shown = mig_name(r)
        assert shown == visible(shown) and shown.startswith("0:")
        assert r.memory_used >= 0 and r.memory_free >= 0
    sample = gpu.sample
    assert sample is not None
    for attr in ("memory_used", "memory_free"):
        v = getattr(sample, attr)
        assert v is None or (v >= 0 and not math.isnan(v))
