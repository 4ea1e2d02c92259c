"""The one MIG notation: `GPU:MIG-index`, as nvitop writes a MIG device ("0:2").

Why the MIG device index and not the GPU instance id: nvitop (whose notation
docs/tui.md promises) numbers a MIG device by its place on the parent
(`nvmlDeviceGetMigDeviceHandleByIndex`), and so does NVML's own MIG-UUID-free
addressing (`CUDA_VISIBLE_DEVICES=MIG-...` aside); the GI id is a separate
number (`nvidia-smi`'s "GI" column, dcgm-exporter's `GPU_I_ID` label) that may
differ from it ("0:2" runs in GI 3). Every view (process table, GPU panel,
details, snapshot text, JSON, exporter labels) writes a MIG device through
`mig_label`; the GI and CI ids are shown beside it, never in its place.
"""

from __future__ import annotations

from collections.abc import Sequence

from gputui.model.record import replace
from gputui.model.snapshot import DeviceSnapshot, GpuProcess


def mig_label(gpu_index: int, mig_index: int | None, gpu_instance_id: int | None = None) -> str:
    """ "0:2" (GPU 0, MIG device 2). Where only the GPU instance id is known (a
    dcgm-exporter series, which names instances by GI id alone) "0:GI3", so that a GI id
    is never read as a MIG index; "0:?" when neither is."""
    if mig_index is not None:
        return f"{gpu_index}:{mig_index}"
    if gpu_instance_id is not None:
        return f"{gpu_index}:GI{gpu_instance_id}"
    return f"{gpu_index}:?"


def mig_ids(gpu_instance_id: int | None, compute_instance_id: int | None) -> str:
    """ "GI 3/CI 0", the ids `nvidia-smi` shows beside a MIG device ("N/A" where unknown)."""
    gi = "N/A" if gpu_instance_id is None else str(gpu_instance_id)
    ci = "N/A" if compute_instance_id is None else str(compute_instance_id)
    return f"GI {gi}/CI {ci}"


def process_mig_label(p: GpuProcess) -> str:
    """A process's GPU as the process table writes it: "1", or "0:2" in a MIG device."""
    if p.gpu_instance_id is None and p.mig_index is None:
        return str(p.gpu_index)
    return mig_label(p.gpu_index, p.mig_index, p.gpu_instance_id)


def with_mig_indexes(
    devices: Sequence[DeviceSnapshot], processes: Sequence[GpuProcess]
) -> tuple[GpuProcess, ...]:
    """`processes` with `mig_index` set from their GPU instance id (NVML reports a process's
    GI id; the MIG device holding that GI on its GPU gives the index)."""
    index_of = {
        (d.index, m.gpu_instance_id): m.index
        for d in devices
        for m in d.mig_devices
        if m.gpu_instance_id is not None
    }
    if not index_of:
        return tuple(processes)
    out = []
    for p in processes:
        gi = p.gpu_instance_id
        found = None if gi is None else index_of.get((p.gpu_index, gi))
        out.append(p if found is None or p.mig_index == found else replace(p, mig_index=found))
    return tuple(out)
