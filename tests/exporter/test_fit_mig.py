"""The exporter's fit metric on a GPU in MIG mode: a job gets one MIG
instance, never the card, so `gputui_fit_max_batch` has one series per instance, labelled
as dcgm-exporter labels MIG series (GPU_I_ID, GPU_I_PROFILE); a GPU not in MIG mode keeps
its one whole-GPU series with the labels it always had. The scenario is the packaged mig
scenario (an A100 80 GB split 3g.40gb / 2g.20gb / 1g.10gb, and an RTX 3090)."""

from __future__ import annotations

from gputui.catalog import load_catalog
from gputui.core.resources import scenarios_dir
from gputui.exporter.poller import Poller
from gputui.fit.core.precision import recommend
from gputui.fit.graph.estimate import check
from gputui.fit.importers.modelsfile import parse_models
from gputui.fit.targets import targets_from_snapshot
from gputui.sources.simulated.scenario import load_scenario
from gputui.sources.simulated.source import SimulatedSource

from .test_metrics import samples, scrape_text

MODELS = """
[[model]]
name = "wide-mlp"
kind = "sequential"
input_shape = [4096]
batch_size = 64
mode = "train"
layers = [
  { type = "Dense", units = 16384 },
  { type = "Dense", units = 16384 },
  { type = "Dense", units = 10 },
]
"""


def test_fit_max_batch_is_per_mig_instance_with_dcgm_labels() -> None:
    catalog = load_catalog()
    models = parse_models(MODELS, "models.toml")
    source = SimulatedSource(load_scenario(scenarios_dir() / "mig.toml"), clock=lambda: 100.0)
    poller = Poller(source, interval=1.0, catalog=catalog, models=models)
    poller.poll_once()
    series = samples(scrape_text(poller))["gputui_fit_max_batch"]
    gpu0 = [(labels, v) for labels, v in series if labels["gpu"] == "0"]
    assert sorted((lb["GPU_I_ID"], lb["GPU_I_PROFILE"]) for lb, _ in gpu0) == [
        ("1", "3g.40gb"),
        ("2", "2g.20gb"),
        ("3", "1g.10gb"),
    ]  # no series for the card as a whole
    (gpu1,) = [labels for labels, _ in series if labels["gpu"] == "1"]
    assert set(gpu1) == {"model", "gpu", "UUID", "Hostname", "precision"}  # as before

    # Each instance's value is the answer for that instance's free memory, below the card's.
    snap = source.poll()
    model = models[0]
    whole = {t.index: t for t in targets_from_snapshot(snap, catalog)}[0]
    card_batch = check(model, whole, precision=recommend(whole.architecture, model.mode)[0])
    instances = {
        str(t.mig.gpu_instance_id): t
        for t in targets_from_snapshot(snap, catalog, mig_instances=True)
        if t.mig is not None
    }
    for labels, value in gpu0:
        target = instances[labels["GPU_I_ID"]]
        precision = recommend(target.architecture, model.mode)[0]
        expected = check(model, target, precision=precision).chosen.max_batch_size_free
        assert value == expected
        assert value < (card_batch.chosen.max_batch_size_free or 0)


def test_memory_and_processes_are_per_mig_device_with_dcgm_labels() -> None:
    """As dcgm-exporter: a MIG GPU's FB_USED/FB_FREE once per MIG device (GPU_I_ID,
    GPU_I_PROFILE), none for the card; processes carry the labels of their device; `mig`
    names the device as the dashboard does ("0:2" is GI 3 in this scenario)."""
    source = SimulatedSource(load_scenario(scenarios_dir() / "mig.toml"), clock=lambda: 100.0)
    snap = source.poll()
    poller = Poller(source, interval=1.0)
    poller.poll_once()
    got = samples(scrape_text(poller))
    for metric, attr in (
        ("DCGM_FI_DEV_FB_FREE", "memory_free"),
        ("DCGM_FI_DEV_FB_USED", "memory_used"),
    ):
        gpu0 = [(lb, v) for lb, v in got[metric] if lb["gpu"] == "0"]
        assert all("GPU_I_ID" in lb for lb, _ in gpu0)  # nothing for the card as a whole
        by_gi = {lb["GPU_I_ID"]: (lb["GPU_I_PROFILE"], lb["mig"], v) for lb, v in gpu0}
        expected = {
            str(m.gpu_instance_id): (m.profile, f"0:{m.index}", getattr(m, attr) / 2**20)
            for m in snap.devices[0].mig_devices
        }
        assert by_gi == expected
        (gpu1,) = [lb for lb, _ in got[metric] if lb["gpu"] == "1"]
        assert "GPU_I_ID" not in gpu1 and "mig" not in gpu1
    assert not any(lb["gpu"] == "0" for lb, _ in got.get("DCGM_FI_DEV_FB_RESERVED", []))
    procs = {lb["pid"]: lb for lb, _ in got["gputui_process_gpu_memory_bytes"]}
    assert (procs["41004"]["GPU_I_ID"], procs["41004"]["mig"]) == ("3", "0:2")
    assert procs["41004"]["GPU_I_PROFILE"] == "1g.10gb"
    assert "mig" not in procs["41010"]  # on the RTX 3090, not in MIG mode
