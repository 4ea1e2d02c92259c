"""Which GPUs the dashboard shows: `--only 0,2`, or CUDA_VISIBLE_DEVICES when asked.

A wrapper around the source, so the panels, the process table, the fit line and
the history all see the same GPUs. The choice is checked against the first
poll: an index or UUID that names no GPU is an error (one line, exit 2), never
an empty dashboard that looks idle.
"""

from __future__ import annotations

import dataclasses
import os
import re

from gputui.core.errors import UserError
from gputui.core.textsafe import visible
from gputui.model.snapshot import DeviceSnapshot, Snapshot
from gputui.sources.base import Source

MAX_ENTRIES = 64
_INDEX = re.compile(r"[0-9]{1,3}")
ORDER_NOTICE = (
    "CUDA_VISIBLE_DEVICES indices are read in NVML's order (PCI bus id); CUDA numbers "
    "GPUs fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, so they may differ"
)


def parse_only(text: str) -> tuple[int, ...]:
    """`--only 0,2` as GPU indices (0 to 999, at most 64, no repeats)."""
    words = [w.strip() for w in text.split(",")]
    if not text.strip() or len(words) > MAX_ENTRIES or not all(_INDEX.fullmatch(w) for w in words):
        raise UserError(
            f"--only: {visible(text)!r} is not a list of GPU indices (e.g. 0,2; at most "
            f"{MAX_ENTRIES}, each 0 to 999)"
        )
    indices = tuple(int(w) for w in words)
    if len(set(indices)) != len(indices):
        raise UserError(f"--only: {visible(text)!r} names a GPU twice")
    return indices


def parse_cuda_visible(text: str | None) -> tuple[str, ...] | None:
    """CUDA_VISIBLE_DEVICES's entries (indices or GPU-/MIG- UUIDs); None when unset.

    As CUDA reads it: the list ends at the first entry that is not valid, and an
    empty value or "-1" hides every GPU."""
    if text is None:
        return None
    out: list[str] = []
    for word in text.split(",")[:MAX_ENTRIES]:
        word = word.strip()
        if _INDEX.fullmatch(word) or re.fullmatch(r"(GPU|MIG)-[0-9A-Za-z-]{1,80}", word):
            out.append(word)
        else:
            break
    return tuple(out)


@dataclasses.dataclass
class ChosenGpus:
    """A source that keeps only the chosen GPUs (by index or UUID) and their processes."""

    source: Source
    wanted: tuple[str, ...]  # indices as text, or UUIDs
    what: str  # "--only" or "CUDA_VISIBLE_DEVICES", for the error
    notice: str | None = None
    # CUDA_VISIBLE_DEVICES: the list ends at the first entry that names no GPU here, as
    # CUDA reads it ("2,9,1" is GPU 2); --only refuses such an entry instead.
    stop_at_unknown: bool = False
    name: str = ""  # the wrapped source's ("nvml", "demo"): the header and banner read it

    def __post_init__(self) -> None:
        self.name = self.source.name

    def _chosen(self, dev: DeviceSnapshot, wanted: tuple[str, ...] | None = None) -> bool:
        uuid = dev.info.uuid or ""
        migs = [m.uuid for m in dev.mig_devices if m.uuid]
        for w in self.wanted if wanted is None else wanted:
            if w.isdigit() and int(w) == dev.index:
                return True
            if w.startswith("GPU-") and uuid.startswith(w):  # CUDA takes a UUID prefix too
                return True
            if w.startswith("MIG-") and any(m.startswith(w) for m in migs):
                return True  # the MIG device's GPU (its other instances too)
        return False

    def in_effect(self, devices: tuple[DeviceSnapshot, ...]) -> tuple[str, ...]:
        """The entries that count: all of them, or (CUDA's rule) those before the first
        entry that names none of these GPUs."""
        if not self.stop_at_unknown:
            return self.wanted
        for n, w in enumerate(self.wanted):
            if not any(self._chosen(d, (w,)) for d in devices):
                return self.wanted[:n]
        return self.wanted

    def poll(self) -> Snapshot:
        snap = self.source.poll()
        wanted = self.in_effect(snap.devices)
        devices = tuple(d for d in snap.devices if self._chosen(d, wanted))
        kept = {d.index for d in devices}
        notices = snap.notices + ((self.notice,) if self.notice else ())
        return dataclasses.replace(
            snap,
            devices=devices,
            processes=tuple(p for p in snap.processes if p.gpu_index in kept),
            notices=notices,
        )

    def poll_check(self) -> None:
        """One poll before the dashboard starts: a bad choice is an error on the command
        line, not an empty dashboard. A poll that fails here is left to the dashboard,
        which shows poll failures and retries."""
        try:
            snap = self.source.poll()
        except Exception:
            return
        self.check(snap)

    def check(self, snap: Snapshot) -> None:
        """Every wanted entry names a GPU of this machine; under CUDA's rule, the first does."""
        wanted = self.wanted[:1] if self.stop_at_unknown else self.wanted
        for w in wanted:
            if not any(self._chosen(d, (w,)) for d in snap.devices):
                indices = ", ".join(str(d.index) for d in snap.devices) or "none"
                raise UserError(f"{self.what}: {visible(w)!r} names no GPU here (GPUs: {indices})")

    def close(self) -> None:
        self.source.close()


def choose_gpus(
    source: Source, only: str | None, respect_cuda: bool, environ: dict[str, str] | None = None
) -> Source:
    """The source as the flags ask; raises UserError (exit 2) for a bad choice."""
    if only is not None and respect_cuda:
        raise UserError("--only and --respect-cuda-visible-devices: choose one")
    if only is not None:
        wrapped = ChosenGpus(source, tuple(str(i) for i in parse_only(only)), "--only")
        wrapped.poll_check()
        return wrapped
    if not respect_cuda:
        return source
    env = os.environ if environ is None else environ
    wanted = parse_cuda_visible(env.get("CUDA_VISIBLE_DEVICES"))
    if wanted is None:
        return source  # unset: CUDA sees every GPU
    notice = None
    if any(w.isdigit() for w in wanted) and env.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID":
        notice = ORDER_NOTICE
    if not wanted:
        raise UserError(
            "--respect-cuda-visible-devices: CUDA_VISIBLE_DEVICES hides every GPU "
            f"({visible(env.get('CUDA_VISIBLE_DEVICES', ''))!r})"
        )
    wrapped = ChosenGpus(source, wanted, "CUDA_VISIBLE_DEVICES", notice, stop_at_unknown=True)
    wrapped.poll_check()
    return wrapped
