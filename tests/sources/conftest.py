"""The telemetry sources under contract, each set up with the same four GPUs.

Every source gets GPUs in the same roles, at the same index (the Prometheus
source numbers the fleet's GPUs 0..n-1 by host, and prefixes names with the host;
a GPU lost before NVML opened has no UUID, so the index is the one key):
- HEALTHY: reports everything its source can read; it runs one process.
- CANNOT_REPORT: cannot report fan, power and temperature (unsupported).
- LOST_FROM_START: lost before the source opened.
- LOSES: healthy at first, lost while the source runs (`case.lose()`).

The sources are the registry's (sources/registry.py), each opened by name through
`open_source`, as the command line opens it; a source added to the registry without a
set-up here fails the suite (test_every_registered_source_is_under_contract):
- nvml: NvmlSource in its own process, on real pynvml and the simulated
  libnvidia-ml.so.1 of ../shared/fakenvml (built here; one scenario per process).
- simulated: SimulatedSource on a scenario file, on its real clock.
- prometheus: PrometheusSource against a real Prometheus server scraping two
  `gputui exporter` processes (simulated GPUs); LOSES is the one GPU of the
  second host, and losing it means that host's exporter stops.

CAPABILITIES says what each source can do at all; a test of a capability runs
on the sources that have it and, on the others, a test checks the lack is
real (so the table cannot silently drift from the code).
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import shutil
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from gputui.model.snapshot import GPM_FIELDS, DeviceSample, Snapshot
from gputui.sources import registry
from gputui.sources.base import open_source
from tests.fakenvml_lib import FAKE, build_fake

HERE = Path(__file__).resolve().parent

HEALTHY, CANNOT_REPORT, LOST_FROM_START, LOSES = range(4)  # the GPUs' indices
UUIDS = tuple(f"GPU-00000000-c0de-4000-8000-00000000000{i + 1}" for i in range(4))
UNREPORTABLE = frozenset({"fan_pct", "power_w", "temperature_c"})
LOSES_AFTER_S = 4.0  # long enough for the first polls of a case, short enough to wait for

SAMPLE_FIELDS = tuple(f.name for f in dataclasses.fields(DeviceSample))

# What each source can do at all (not what one GPU supports).
#   processes:  the snapshot lists the GPUs' processes
#   unsupported_list: a device names the fields it cannot report (DeviceSnapshot.unsupported)
#   host:       the snapshot carries the host's CPU and memory (Snapshot.host)
#   versions:   the snapshot carries the driver and CUDA versions
CAPABILITIES: dict[str, frozenset[str]] = {
    "nvml": frozenset({"processes", "unsupported_list", "host", "versions"}),
    "simulated": frozenset({"processes", "unsupported_list", "host", "versions"}),
    "replay": frozenset({"processes", "unsupported_list", "host", "versions"}),
    "prometheus": frozenset(),
}
SOURCES = registry.sources()  # every registered source, in the registry's order

# The DeviceSample fields each source reads; the rest it never fills (always None).
# Prometheus reads dcgm-exporter's default counters and gputui's extras.
PROMETHEUS_FIELDS = frozenset(
    {
        "utilization_gpu", "utilization_memory", "memory_used", "memory_free", "memory_total",
        "memory_reserved", "temperature_c", "fan_pct", "power_w", "power_limit_w",
        "sm_clock_mhz", "mem_clock_mhz", "performance_state", "pcie_rx_kbs", "pcie_tx_kbs",
        "encoder_util", "decoder_util", "throttle_reasons",
    }
)  # fmt: skip
# The four GPUs are A100s: GPM (Hopper and later) is never among what they report.
REPORTED_FIELDS: dict[str, frozenset[str]] = {
    "nvml": frozenset(SAMPLE_FIELDS) - frozenset(GPM_FIELDS),
    "simulated": frozenset(SAMPLE_FIELDS) - frozenset(GPM_FIELDS),
    "replay": frozenset(SAMPLE_FIELDS) - frozenset(GPM_FIELDS),
    "prometheus": PROMETHEUS_FIELDS,
}


def with_capability(capability: str) -> list[Any]:
    return [pytest.param(s, id=s) for s in SOURCES if capability in CAPABILITIES[s]]


def without_capability(capability: str) -> list[Any]:
    return [pytest.param(s, id=s) for s in SOURCES if capability not in CAPABILITIES[s]]


@dataclass
class SourceCase:
    """One source, opened on the four GPUs, with how to lose one while it runs."""

    name: str
    source: Any  # a gputui.sources.base.Source
    lose: Callable[[], None]  # after it returns, LOSES is lost (maybe after a scrape or two)
    poll_bound_s: float
    cleanup: list[Callable[[], None]] = field(default_factory=list)

    def poll(self) -> Snapshot:
        snapshot = self.source.poll()
        assert isinstance(snapshot, Snapshot), f"{self.name}: poll() gave {type(snapshot)}"
        return snapshot

    def close(self) -> None:
        self.source.close()
        for step in reversed(self.cleanup):
            step()


def _sleep_until(when: float) -> Callable[[], None]:
    return lambda: time.sleep(max(0.0, when - time.monotonic()))


# --- nvml: the real binding on the simulated library, in a worker process -----------------

FAKENVML_SCENARIO = """
driver_version = 550.54.15
cuda_driver_version = 12.4
nvml_version = 12.550.54.15

[device]
name = NVIDIA A100-SXM4-80GB
uuid = {healthy}
memory_total = 81920MiB
compute_capability = 8.0
power_limit_w = 400
power_w = 150:350
util_gpu = 30:90
temperature_c = 45:70
process = {pid} 2048MiB compute

[device]
name = NVIDIA GeForce RTX 3090
uuid = {cannot_report}
memory_total = 24576MiB
compute_capability = 8.6
unsupported = fan, power, temperature

[device]
name = NVIDIA A100-SXM4-40GB
uuid = {lost}
memory_total = 40960MiB
lost = true

[device]
name = NVIDIA L4
uuid = {loses}
memory_total = 23034MiB
compute_capability = 8.9
event = {loses_after} xid 79 lost
"""


class WorkerSource:
    """NvmlSource in a child process (NVML reads its scenario once per process), over a pipe."""

    name = "nvml"

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "nvml_worker.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **env},
        )
        self.started = time.monotonic()
        self._closed = False
        reply = self._read()
        if reply != "ready":
            raise AssertionError(f"the NVML worker did not open: {reply}")

    def _read(self) -> Any:
        assert self.proc.stdout is not None
        head = self.proc.stdout.read(4)
        if len(head) < 4:
            err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
            raise AssertionError(f"the NVML worker exited: {err[-2000:]}")
        (size,) = struct.unpack("!I", head)
        reply = pickle.loads(self.proc.stdout.read(size))
        if isinstance(reply, BaseException):
            raise reply
        return reply

    def poll(self) -> Snapshot:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"poll\n")
        self.proc.stdin.flush()
        snapshot = self._read()
        assert isinstance(snapshot, Snapshot)
        return snapshot

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(b"close\n")
            self.proc.stdin.close()
            self.proc.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="session")
def fakenvml_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc to build the fake NVML")
    if not (FAKE / "fakenvml.c").is_file():
        pytest.skip(f"no fake NVML sources at {FAKE} (set FAKENVML_DIR)")
    folder = tmp_path_factory.mktemp("fakenvml")
    build_fake(f"BUILD={folder}")
    return folder


def open_nvml(build: Path, folder: Path) -> SourceCase:
    scenario = folder / "contract.conf"
    scenario.write_text(
        FAKENVML_SCENARIO.format(
            healthy=UUIDS[HEALTHY],
            cannot_report=UUIDS[CANNOT_REPORT],
            lost=UUIDS[LOST_FROM_START],
            loses=UUIDS[LOSES],
            loses_after=LOSES_AFTER_S,
            pid=os.getpid(),  # a process that exists, so the host side can read it
        )
    )
    source = WorkerSource(
        {
            "LD_LIBRARY_PATH": str(build),
            "FAKE_NVML_SCENARIO": str(scenario),
            "FAKE_NVML_QUIET": "1",
        }
    )
    # The fake's event clock starts at the worker's nvmlInit, after `started`.
    lose = _sleep_until(source.started + LOSES_AFTER_S)
    return SourceCase("nvml", source, lose, poll_bound_s=5.0)


# --- simulated --------------------------------------------------------------------------

SIM_GPUS = """
[[gpu]]
name = "NVIDIA A100-SXM4-80GB"
uuid = "{healthy}"
memory_total = "81920 MiB"
compute_capability = "8.0"
architecture = "ampere"
power_limit_w = 400
max_sm_clock_mhz = 1410
max_mem_clock_mhz = 1593

[[gpu]]
name = "NVIDIA GeForce RTX 3090"
uuid = "{cannot_report}"
memory_total = "24576 MiB"
compute_capability = "8.6"
power_limit_w = 350
max_sm_clock_mhz = 2100
max_mem_clock_mhz = 9751
unsupported = ["fan", "power", "temperature"]

[[gpu]]
name = "NVIDIA A100-SXM4-40GB"
uuid = "{lost}"
memory_total = "40960 MiB"
power_limit_w = 400
max_sm_clock_mhz = 1410
max_mem_clock_mhz = 1215
lost_after_s = 0

[[process]]
gpu = 0
pid = 4242
user = "alice"
command = "python train.py"
workload = "training"
gpu_memory = "30 GiB"
start_s = -600

[[process]]
gpu = 2
pid = 4343
user = "bob"
command = "python serve.py"
workload = "inference"
gpu_memory = "8 GiB"
start_s = -600
"""

SIM_LOSES = """
[[gpu]]
name = "NVIDIA L4"
uuid = "{loses}"
memory_total = "23034 MiB"
compute_capability = "8.9"
power_limit_w = 72
max_sm_clock_mhz = 2040
max_mem_clock_mhz = 6251
{lost_after}
"""


def sim_scenario(hostname: str, gpus: str) -> str:
    top = (
        f'seed = 5\nhostname = "{hostname}"\ndriver_version = "550.54.15"\n'
        'cuda_driver_version = "12.4"\n\n[host]\ncpu_count = 4\nmemory_total = "16 GiB"\n'
    )
    return top + gpus.format(
        healthy=UUIDS[HEALTHY],
        cannot_report=UUIDS[CANNOT_REPORT],
        lost=UUIDS[LOST_FROM_START],
        loses=UUIDS[LOSES],
        lost_after=f"lost_after_s = {LOSES_AFTER_S}",
    )


def open_simulated(folder: Path) -> SourceCase:
    """On a clock that runs with the real one and that `lose` moves on past LOSES_AFTER_S
    (no wait); the scenario starts at the real time, so timestamps are the poll's unix time."""
    from gputui.sources.simulated.source import SimulatedSource

    path = folder / "contract.toml"
    started = time.time()
    path.write_text(
        f"start_timestamp = {started!r}\n" + sim_scenario("contract-host", SIM_GPUS + SIM_LOSES)
    )
    opened, skipped = time.monotonic(), [0.0]

    def clock() -> float:
        return time.monotonic() - opened + skipped[0]

    def lose() -> None:
        skipped[0] = max(skipped[0], LOSES_AFTER_S)

    source = SimulatedSource.from_scenario(path, clock=clock)
    return SourceCase("simulated", source, lose, poll_bound_s=2.0)


# --- replay -----------------------------------------------------------------------------

REPLAY_STEP_S = 0.25  # between recorded polls
REPLAY_LENGTH_S = 90.0


def open_replay(folder: Path) -> SourceCase:
    """A recording of the simulated GPUs (made on the simulator's clock, no wait), played
    from now: its polls were stamped from the real time at set-up, so a replayed poll
    carries about the time it is played at; `lose` moves the replay clock past
    LOSES_AFTER_S, as for the simulator."""
    from gputui.recording.reader import open_recording
    from gputui.recording.store import Recorder
    from gputui.sources.replay.source import ReplaySource
    from gputui.sources.simulated.source import SimulatedSource

    scenario = folder / "contract.toml"
    started = time.time()
    scenario.write_text(
        f"start_timestamp = {started!r}\n" + sim_scenario("contract-host", SIM_GPUS + SIM_LOSES)
    )
    at = [0.0]
    simulated = SimulatedSource.from_scenario(scenario, clock=lambda: at[0])
    path = folder / "contract.gputui"
    with Recorder(path) as recorder:
        while at[0] <= REPLAY_LENGTH_S:
            recorder.write(simulated.poll())
            at[0] += REPLAY_STEP_S
    skipped = [0.0]
    opened = time.monotonic()
    source = ReplaySource(
        open_recording(path),
        clock=lambda: time.monotonic() - opened + skipped[0],
        start=time.time(),
    )

    def lose() -> None:
        skipped[0] = max(skipped[0], LOSES_AFTER_S)

    return SourceCase("replay", source, lose, poll_bound_s=2.0)


# --- prometheus ---------------------------------------------------------------------------


@dataclass
class PromFleet:
    prom: Any
    exporters: dict[str, Any]

    def stop(self) -> None:
        self.prom.stop()
        for e in self.exporters.values():
            e.stop()


def start_prom_fleet(folder: Path) -> PromFleet:
    from tests.prometheus_harness import PROMETHEUS, ExporterProcess, PrometheusServer

    if PROMETHEUS is None:
        pytest.skip("needs the prometheus binary (apt install prometheus)")
    exporters: dict[str, Any] = {}
    try:
        for host, gpus in (("contract-a", SIM_GPUS), ("contract-b", SIM_LOSES)):
            path = folder / f"{host}.toml"
            # The second host's GPU is lost only when its exporter stops.
            path.write_text(sim_scenario(host, gpus.replace("{lost_after}", "")))
            exporters[host] = ExporterProcess(
                ["--source", "demo", "--scenario", str(path), "--listen", "127.0.0.1:0",
                 "--interval", "0.5"]
            )  # fmt: skip
        prom = PrometheusServer(folder / "prometheus", [e.address for e in exporters.values()])
        fleet = PromFleet(prom.start(), exporters)
        prom.wait_targets_up()
        prom.wait_for("DCGM_FI_DEV_FB_USED", 3)  # both hosts' answering GPUs ingested
        prom.wait_for("gputui_gpu_up", 4)
        return fleet
    except BaseException:
        for e in exporters.values():
            e.stop()
        raise


@pytest.fixture(scope="session")
def prom_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromFleet]:
    """One server for the read-only cases (starting one takes seconds)."""
    fleet = start_prom_fleet(tmp_path_factory.mktemp("contract-prom"))
    yield fleet
    fleet.stop()


def open_prometheus(fleet: PromFleet) -> SourceCase:
    source, _ = open_source("prometheus", options={"prometheus": fleet.prom.url})
    return SourceCase("prometheus", source, fleet.exporters["contract-b"].stop, poll_bound_s=5.0)


# --- the fixtures the suite uses ----------------------------------------------------------


def _open_prometheus_case(
    request: pytest.FixtureRequest, folder: Path, private: bool
) -> SourceCase:
    """`private`: the test may lose a GPU, so the source gets a Prometheus of its own."""
    if not private:
        return open_prometheus(request.getfixturevalue("prom_fleet"))
    fleet = start_prom_fleet(folder)
    case = open_prometheus(fleet)
    case.cleanup.append(fleet.stop)
    return case


# Each registered source's set-up on the four GPUs: (request, folder, private) -> case.
SETUPS: dict[str, Callable[[pytest.FixtureRequest, Path, bool], SourceCase]] = {
    "nvml": lambda request, folder, _: open_nvml(request.getfixturevalue("fakenvml_build"), folder),
    "simulated": lambda _request, folder, _private: open_simulated(folder),
    "replay": lambda _request, folder, _private: open_replay(folder),
    "prometheus": _open_prometheus_case,
}


def _open(
    request: pytest.FixtureRequest, name: str, tmp_path: Path, *, private: bool
) -> SourceCase:
    if name not in SETUPS:
        pytest.fail(f"source {name!r} is registered but has no set-up in tests/sources/conftest.py")
    return SETUPS[name](request, tmp_path, private)


@pytest.fixture
def open_case(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[..., SourceCase]]:
    """open_case(name, private=False): a source of that name on the four GPUs, closed after."""
    opened: list[SourceCase] = []

    def open_one(name: str, *, private: bool = False) -> SourceCase:
        folder = tmp_path / f"{name}-{len(opened)}"
        folder.mkdir()
        case = _open(request, name, folder, private=private)
        opened.append(case)
        return case

    yield open_one
    for case in opened:
        case.close()


@pytest.fixture(params=SOURCES)
def case(request: pytest.FixtureRequest, open_case: Callable[..., SourceCase]) -> SourceCase:
    """Every source in turn, on the shared set-up."""
    return open_case(request.param)
