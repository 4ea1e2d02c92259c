"""GPM readings (gpm.py) written into the poll's records: the whole GPU's into its sample,
each GPU instance's into its MIG device. Apart from gpm.py so the poll path imports only
this small function where no GPU has GPM."""

from __future__ import annotations

from collections.abc import Sequence

from gputui.model.record import replace
from gputui.model.snapshot import GPM_FIELDS as _NAMES
from gputui.model.snapshot import DeviceSample, MigDevice, Snapshot
from gputui.sources.nvml.query import DeviceFailed

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    from typing import Any

    from gputui.sources.nvml.gpm import GpmValues


def with_gpm(
    values: dict[int | None, GpmValues],
    sample: DeviceSample | None,
    migs: tuple[MigDevice, ...],
) -> tuple[DeviceSample | None, tuple[MigDevice, ...]]:
    whole = values.get(None)
    if sample is not None and whole is not None and any(v is not None for v in whole):
        sample = replace(sample, **dict(zip(_NAMES, whole, strict=True)))
    if migs:
        migs = tuple(_mig(m, values.get(m.gpu_instance_id)) for m in migs)
    return sample, migs


def _mig(m: MigDevice, got: GpmValues | None) -> MigDevice:
    if m.gpu_instance_id is None or got is None or all(v is None for v in got):
        return m
    return replace(m, **dict(zip(_NAMES, got, strict=True)))


def gpm_again(snapshot: Snapshot, devices: Sequence[Any]) -> Snapshot:
    """`snapshot` with the GPM figures a first poll right after open could not have yet
    (`devices`: the source's, each with `index`, `gpm` and `failed`; a GPU lost meanwhile
    is marked failed there and here)."""
    by_index = {d.index: d for d in devices}
    out = []
    for dev in snapshot.devices:
        d = by_index.get(dev.index)
        if d is None or d.gpm is None or dev.failed is not None or d.failed is not None:
            out.append(dev)
            continue
        try:
            sample, migs = with_gpm(d.gpm.read(), dev.sample, dev.mig_devices)
        except DeviceFailed as exc:
            d.failed = exc.reason
            out.append(replace(dev, sample=None, failed=exc.reason, mig_devices=()))
            continue
        out.append(replace(dev, sample=sample, mig_devices=migs))
    return replace(snapshot, devices=tuple(out))
