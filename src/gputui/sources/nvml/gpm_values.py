"""GPM readings (gpm.py) written into the poll's records: the whole GPU's into its sample,
each GPU instance's into its MIG device. Apart from gpm.py so the poll path imports only
this small function where no GPU has GPM."""

from __future__ import annotations

from gputui.model.record import replace
from gputui.model.snapshot import GPM_FIELDS as _NAMES
from gputui.model.snapshot import DeviceSample, MigDevice

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
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
