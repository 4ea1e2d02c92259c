"""What `gputui exporter` serves: dcgm names, units and labels; absent never 0; no secrets."""

from __future__ import annotations

import threading
import time
import urllib.request
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from gputui.catalog import load_catalog
from gputui.exporter.families import DCGM_LABELS, build_families
from gputui.exporter.poller import Poller
from gputui.fit.importers.modelsfile import parse_models
from gputui.model.snapshot import Snapshot
from gputui.sources.simulated.scenario import load_scenario
from gputui.sources.simulated.source import SimulatedSource
from tests.fleet import write_scenario


def scrape_text(poller: Poller) -> str:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(poller)
    return generate_latest(registry).decode()


def samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((dict(s.labels), s.value))
    return out


def sim(path: Path, t: float = 100.0) -> SimulatedSource:
    return SimulatedSource(load_scenario(path), clock=lambda: t)


def test_dcgm_names_units_and_labels(tmp_path: Path) -> None:
    source = sim(write_scenario(tmp_path, "node-a"))
    snap = source.poll()
    poller = Poller(source, interval=1.0)
    poller.poll_once()
    got = samples(scrape_text(poller))
    util = got["DCGM_FI_DEV_GPU_UTIL"]
    assert {tuple(sorted(labels)) for labels, _ in util} == {tuple(sorted(DCGM_LABELS))}
    by_gpu = {labels["gpu"]: labels for labels, _ in util}
    assert by_gpu["0"]["modelName"] == "NVIDIA A100-SXM4-80GB"
    assert by_gpu["0"]["Hostname"] == "node-a"
    assert by_gpu["0"]["device"] == "nvidia0"
    assert by_gpu["0"]["UUID"] == snap.devices[0].info.uuid
    assert by_gpu["1"]["pci_bus_id"] == snap.devices[1].info.pci_bus_id
    # memory in MiB, as dcgm-exporter
    fb_used = {labels["gpu"]: v for labels, v in got["DCGM_FI_DEV_FB_USED"]}
    s0 = snap.devices[0].sample
    assert s0 is not None and s0.memory_used is not None
    assert fb_used["0"] == s0.memory_used / 2**20
    temp = {labels["gpu"]: v for labels, v in got["DCGM_FI_DEV_GPU_TEMP"]}
    assert temp["0"] == s0.temperature_c


def test_unsupported_field_is_absent_not_zero(tmp_path: Path) -> None:
    source = sim(write_scenario(tmp_path, "node-a"))
    snap = source.poll()
    poller = Poller(source, interval=1.0)
    poller.poll_once()
    got = samples(scrape_text(poller))
    power_gpus = {labels["gpu"] for labels, _ in got["DCGM_FI_DEV_POWER_USAGE"]}
    assert power_gpus == {"0"}  # GPU 1 cannot report power: no series, not a 0 W one
    assert "gputui_gpu_fan_percent" not in got or all(
        labels["gpu"] != "1" for labels, _ in got["gputui_gpu_fan_percent"]
    )
    # the energy counter: the snapshot's own reading, where the device gives one
    energy = {labels["gpu"] for labels, _ in got.get("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", [])}
    assert energy == {
        str(d.index) for d in snap.devices if d.sample is not None and d.sample.energy_j is not None
    }


def test_lost_gpu_exports_up_zero_and_nothing_else(tmp_path: Path) -> None:
    poller = Poller(sim(write_scenario(tmp_path, "node-a", lost_after_s=50), t=100), interval=1)
    poller.poll_once()
    got = samples(scrape_text(poller))
    up = {labels["gpu"]: v for labels, v in got["gputui_gpu_up"]}
    assert up == {"0": 0.0, "1": 1.0}
    for name, series in got.items():
        if name == "gputui_gpu_up":
            continue
        assert all(labels.get("gpu") != "0" for labels, _ in series), name


def test_processes_carry_command_name_but_not_arguments(tmp_path: Path) -> None:
    poller = Poller(sim(write_scenario(tmp_path, "node-a")), interval=1.0)
    poller.poll_once()
    text = scrape_text(poller)
    assert "SECRET123" not in text
    got = samples(text)
    procs = {labels["pid"]: labels for labels, _ in got["gputui_process_gpu_memory_bytes"]}
    assert procs["4242"]["command"] == "python"
    assert procs["4242"]["user"] == "alice"
    assert procs["4242"]["gpu"] == "0"
    assert "cmdline" not in procs["4242"]
    assert {labels["pid"] for labels, _ in got["gputui_process_sm_util_percent"]} == {"4242", "5151"}


def test_full_cmdline_only_when_asked(tmp_path: Path) -> None:
    poller = Poller(sim(write_scenario(tmp_path, "node-a")), interval=1.0, full_cmdline=True)
    poller.poll_once()
    got = samples(scrape_text(poller))
    procs = {labels["pid"]: labels for labels, _ in got["gputui_process_gpu_memory_bytes"]}
    assert procs["4242"]["cmdline"] == "python train.py --wandb-key=SECRET123 --lr 3e-4"


def test_throttle_reasons_are_zero_one_per_reason(tmp_path: Path) -> None:
    poller = Poller(sim(write_scenario(tmp_path, "node-a")), interval=1.0)
    poller.poll_once()
    got = samples(scrape_text(poller))
    values = {(labels["gpu"], labels["reason"]): v for labels, v in got["gputui_gpu_throttle_reason"]}
    assert {v for v in values.values()} <= {0.0, 1.0}
    assert ("0", "hw_thermal") in values and ("0", "idle") not in values


def test_catalog_card_info_and_fit_max_batch(tmp_path: Path) -> None:
    models = parse_models(
        """
[[model]]
name = "mlp"
kind = "sequential"
input_shape = [1024]
batch_size = 32
mode = "train"
layers = [
  { type = "Dense", units = 4096 },
  { type = "Dense", units = 10 },
]
""",
        "models.toml",
    )
    poller = Poller(
        sim(write_scenario(tmp_path, "node-a")), interval=1.0, catalog=load_catalog(), models=models
    )
    poller.poll_once()
    got = samples(scrape_text(poller))
    cards = {labels["gpu"]: labels for labels, _ in got["gputui_gpu_card_info"]}
    assert cards["0"]["architecture"] == "Ampere"
    assert "A100" in cards["0"]["card"]
    fits = {labels["gpu"]: (labels, v) for labels, v in got["gputui_fit_max_batch"]}
    assert set(fits) == {"0", "1"}
    labels, batch = fits["0"]
    assert labels["model"] == "mlp" and labels["precision"]
    assert batch >= 1


def test_a_scrape_does_not_poll_and_does_not_wait_for_a_slow_poll(tmp_path: Path) -> None:
    inner = sim(write_scenario(tmp_path, "node-a"))
    release = threading.Event()

    class Slow:
        name = "simulated"
        polls = 0

        def poll(self) -> Snapshot:
            Slow.polls += 1
            if Slow.polls > 1:
                release.wait(10)
            return inner.poll()

        def close(self) -> None:
            pass

    poller = Poller(Slow(), interval=0.05)
    poller.poll_once()  # first poll: data to serve
    poller.start()  # the background poll now hangs inside the "driver"
    try:
        time.sleep(0.1)
        start = time.perf_counter()
        for _ in range(10):
            text = scrape_text(poller)
        elapsed = time.perf_counter() - start
        assert "DCGM_FI_DEV_GPU_UTIL" in text
        assert elapsed < 2.0  # ten scrapes, none of them waiting on the 10 s poll
        assert Slow.polls == 2  # scrapes polled nothing
    finally:
        release.set()
        poller.stop()


def test_a_failing_poll_keeps_the_last_good_data(tmp_path: Path) -> None:
    inner = sim(write_scenario(tmp_path, "node-a"))

    class Flaky:
        name = "simulated"
        fail = False

        def poll(self) -> Snapshot:
            if Flaky.fail:
                raise RuntimeError("driver hiccup")
            return inner.poll()

        def close(self) -> None:
            pass

    poller = Poller(Flaky(), interval=1.0)
    poller.poll_once()
    Flaky.fail = True
    poller.poll_once()
    got = samples(scrape_text(poller))
    assert got["gputui_exporter_poll_errors_total"][0][1] == 1.0
    assert len(got["DCGM_FI_DEV_GPU_UTIL"]) == 2


def test_build_families_sanitises_outside_strings(tmp_path: Path) -> None:
    snap = sim(write_scenario(tmp_path, "node-a")).poll()
    fams = build_families(snap, hostname="evil\x1b]0;pwned\x07")
    hosts = {s.labels["Hostname"] for f in fams for s in f.samples if "Hostname" in s.labels}
    assert hosts == {"evil^[]0;pwned^G"}


def test_running_exporter_binds_loopback_and_serves_parseable_text(
    start_exporter: type, scenario: Path
) -> None:
    exp = start_exporter(["--source", "demo", "--scenario", str(scenario), "--listen", "127.0.0.1:0", "--interval", "0.5"])
    assert exp.url.startswith("http://127.0.0.1:")
    assert not any("warning" in line for line in exp.lines)
    deadline = time.monotonic() + 10
    text = ""
    while time.monotonic() < deadline and "DCGM_FI_DEV_GPU_UTIL" not in text:
        text = urllib.request.urlopen(exp.url, timeout=5).read().decode()
        time.sleep(0.1)
    families = {f.name for f in text_string_to_metric_families(text)}
    assert {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_FREE", "gputui_gpu_up"} <= families
    assert "SECRET123" not in text


def test_scrapes_between_polls_get_the_same_encoding_and_a_poll_changes_it(tmp_path: Path) -> None:
    import gzip

    from gputui.exporter.server import MetricsServer

    clock = {"t": 100.0}
    source = SimulatedSource(load_scenario(write_scenario(tmp_path, "node-a")), clock=lambda: clock["t"])
    poller = Poller(source, interval=3600)
    poller.poll_once()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(poller)
    server = MetricsServer(registry, "127.0.0.1", 0, generation=lambda: poller.generation)
    server.start()
    try:
        def get(encoding: str | None = None) -> tuple[bytes, str | None]:
            req = urllib.request.Request(server.url)
            if encoding:
                req.add_header("Accept-Encoding", encoding)
            with urllib.request.urlopen(req, timeout=5) as r:
                return r.read(), r.headers.get("Content-Encoding")

        first, _ = get()
        assert get()[0] == first
        zipped, how = get("gzip")
        assert how == "gzip" and gzip.decompress(zipped) == first  # the library still negotiates
        clock["t"] = 160.0
        poller.poll_once()
        after, _ = get()
        assert after != first
        assert "DCGM_FI_DEV_GPU_UTIL" in {f.name for f in text_string_to_metric_families(after.decode())}
    finally:
        server.shutdown()
