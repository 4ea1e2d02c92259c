"""What the fastpaint equivalence tests share: the app under test, a wait, the devices."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gputui.model.snapshot import MigDevice
from gputui.tui.app import GpuTuiApp

from .conftest import GIB, ScriptedSource, make_device


def paint_app(source: ScriptedSource) -> GpuTuiApp:
    return GpuTuiApp(
        source, interval=0.05, clock=lambda: "01:02:03", hostname="t", card_lookup=None
    )


def paint_devices() -> tuple[Any, ...]:
    mig = MigDevice(
        index=0,
        gpu_instance_id=1,
        compute_instance_id=0,
        uuid="MIG-1",
        name="NVIDIA A100-SXM4-80GB MIG 1g.10gb",
        profile="1g.10gb",
        memory_total=10 * GIB,
        memory_used=2 * GIB,
    )
    return (
        make_device(0, util=95, throttle_reasons=("sw_power_cap",)),
        replace(make_device(1, util=None, used_gib=None), failed="GPU is lost"),
        make_device(2, util=0, ecc_volatile_uncorrected=3, temperature_c=None, power_w=None),
        replace(make_device(3, util=40), mig_devices=(mig,)),
    )
