"""No control character from outside reaches the terminal in one-shot output.

Hostile strings go in through each source and importer: an HF config's
model_type, layer names of a models TOML graph and of a Keras file (the "alive
at that moment" list and the layer table), a scenario's process and GPU fields,
a catalog folder's card texts, a real process renamed by its owner (comm and
argv, read from /proc by both host samplers). Each command's stdout (and stderr)
must hold none of C0 (but newline), DEL, C1, U+2028/2029, the bidi embeddings,
overrides and isolates: shown in caret or escape notation instead. The NVML
strings at the pynvml boundary are covered by tests/sources/nvml/test_escape_injection.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputui.cli import main
from gputui.model.snapshot import (
    DeviceInfo,
    DeviceSnapshot,
    GpuProcess,
    HostSnapshot,
    MigDevice,
    Snapshot,
)
from gputui.render.snapshot_text import render

REPO = Path(__file__).resolve().parents[2]
# Everything a terminal acts upon or that reorders what a reader sees; "\n" ends lines.
FORBIDDEN = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x00\u202e\u2066\x9b\x7f\u2028\t\r"


def _clean(text: str) -> None:
    found = FORBIDDEN.search(text)
    assert found is None, (
        f"{found.group()!r} at {found.start()}: {text[max(0, found.start() - 60) : found.start() + 20]!r}"
    )


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _toml(text: str) -> str:
    """A TOML basic string for `text` (control characters as \\uXXXX escapes)."""
    return json.dumps(text)  # JSON's escapes are TOML's for these characters


# -- fit ----------------------------------------------------------------------------------


def test_fit_on_an_hf_config_shows_its_model_type_visibly(tmp_path: Path) -> None:
    config = {
        "model_type": "\x1b[31mred" + HOSTILE,
        "architectures": ["Llama" + HOSTILE],
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "vocab_size": 1000,
        "max_position_embeddings": 512,
        "torch_dtype": "float16",
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    for extra in ([], ["--all-cards"]):
        code, out, err = _run(
            ["fit", str(path), "--gpu", "RTX 3090"] if not extra else ["fit", str(path), *extra]
        )
        assert code in (0, 1), err
        _clean(out)
        _clean(err)
        assert "^[[31mred" in out.splitlines()[0]  # the model: line, shown in caret notation
    code, out, _ = _run(["fit", str(path), "--gpu", "RTX 3090", "--json"])
    assert json.loads(out)["models"][0]["model"]["model_type"].startswith(
        "\x1b[31mred"
    )  # JSON: as it is, escaped
    _clean(out)


def test_fit_on_a_gguf_shows_its_architecture_and_name_visibly(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "tests" / "fixtures" / "gguf"))
    try:
        import make_tiny_gguf
    finally:
        sys.path.pop(0)
    meta, tensors = make_tiny_gguf.tiny_llama()
    meta["general.name"] = "tiny" + HOSTILE
    path = tmp_path / "tiny.gguf"
    make_tiny_gguf.write_gguf(path, meta, tensors)
    code, out, err = _run(["fit", str(path), "--gpu", "RTX 3090"])
    assert code in (0, 1), err
    _clean(out)
    _clean(err)


GRAPH = """\
[[model]]
name = "evil"
kind = "functional"
batch_size = 32
optimizer = "adam"
inputs = [ {{ name = {input}, shape = [64, 64, 3] }} ]
layers = [
  {{ name = {conv}, type = "Conv2D", filters = 64, kernel_size = 3, padding = "same" }},
  {{ name = {big}, type = "Dense", units = 512 }},
  {{ name = "out", type = "Dense", units = 10 }},
]
"""


def test_fit_on_a_models_toml_graph_shows_layer_names_visibly(tmp_path: Path) -> None:
    """The named layers' outputs are the largest tensors alive at the peak: in the list."""
    path = tmp_path / "models.toml"
    path.write_text(
        GRAPH.format(
            input=_toml("in\u202eput\x00"),
            conv=_toml("conv\x1b]0;pwned\x07"),
            big=_toml("big\u202eone\x00x" + HOSTILE),
        ),
        encoding="utf-8",
    )
    code, out, err = _run(["fit", str(path), "--gpu", "RTX 3090", "--layers"])
    assert code in (0, 1), err
    alive = out.split("alive at that moment", 1)[1]
    assert "big\\u202eone^@x" in alive and "conv^[]0;pwned^G" in alive
    _clean(out)
    _clean(err)
    code, out, err = _run(["fit", str(path), "--all-cards"])
    _clean(out)


def test_fit_on_a_keras_file_shows_layer_names_visibly(tmp_path: Path) -> None:
    data = json.loads((REPO / "tests" / "fixtures" / "keras" / "mnist_convnet.json").read_text())
    layers = data["config"]["layers"]
    renamed = {}
    for layer in layers:
        if layer["class_name"] in ("Conv2D", "Dense"):
            new = layer["config"]["name"] + HOSTILE.replace(":", "")
            renamed[layer["config"]["name"]] = new
            layer["config"]["name"] = new
            if "name" in layer:
                layer["name"] = new
    text = json.dumps(data)
    for old, new in renamed.items():  # the inbound references follow the renames
        text = text.replace(json.dumps(old), json.dumps(new))
    path = tmp_path / "model.json"
    path.write_text(text, encoding="utf-8")
    code, out, err = _run(["fit", str(path), "--gpu", "RTX 3090", "--layers"])
    assert code in (0, 1), err
    assert "alive at that moment" in out
    _clean(out)
    _clean(err)


# -- snapshot -----------------------------------------------------------------------------

SCENARIO = """\
seed = 1
hostname = {s}
driver_version = {s}
cuda_driver_version = {s}
nvml_version = {s}
notices = [{s}]

[host]
cpu_count = 4
memory_total = "16 GiB"

[[gpu]]
name = {s}
memory_total = "24 GiB"
power_limit_w = 350
max_sm_clock_mhz = 2000
max_mem_clock_mhz = 9000
uuid = {s}
pci_bus_id = {s}
architecture = {s}

[[process]]
gpu = 0
pid = 100
user = {s}
command = {cmd}
gpu_memory = "1 GiB"
container = {s}
"""


def test_snapshot_of_a_scenario_shows_every_field_visibly(tmp_path: Path) -> None:
    path = tmp_path / ("s" + "\x1b[1m" + ".toml")
    path.write_text(
        SCENARIO.format(
            s=_toml("x" + HOSTILE),
            cmd=_toml("py" + HOSTILE.replace("\x00", "") + " train.py \x00x"),
        ),
        encoding="utf-8",
    )
    code, out, err = _run(["snapshot", "--scenario", str(path)])
    assert code == 0, err
    _clean(out)
    assert "x^[]0;pwned^G^[[2J^@\\u202e" in out
    code, out, err = _run(["snapshot", "--scenario", str(path), "--json"])
    assert code == 0, err
    doc = json.loads(out)
    strings: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            strings.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(doc)
    _clean("\n".join(strings))  # parsed back: what a reader of the JSON would print
    assert doc["processes"][0]["user"].startswith("x^[]0;pwned")


def test_the_table_shows_fields_visibly_even_when_a_source_forgot() -> None:
    """The renderer's own check: a Snapshot built with raw strings (no boundary at all)."""
    snap = Snapshot(
        timestamp=0.0,
        source="nvml",
        devices=(
            DeviceSnapshot(
                info=DeviceInfo(index=0, name="GPU" + HOSTILE),
                failed="lost" + HOSTILE,
                mig_devices=(MigDevice(index=0, profile="3g" + HOSTILE, uuid="MIG-" + HOSTILE),),
            ),
        ),
        processes=(
            GpuProcess(
                gpu_index=0,
                pid=7,
                type="compute",
                user="u" + HOSTILE,
                name="n" + HOSTILE,
                cmdline=("c" + HOSTILE, "arg" + HOSTILE),
                container="k8s:" + HOSTILE,
            ),
        ),
        host=HostSnapshot(hostname="h" + HOSTILE),
        driver_version="d" + HOSTILE,
        cuda_driver_version="12" + HOSTILE,
        notices=("note" + HOSTILE,),
    )
    for color in (False, True):
        text = render(snap, color=color, width=200, source_label="l" + HOSTILE)
        if color:  # the table's own colours are the only escapes left
            text = re.sub("\x1b\\[[0-9;]*m", "", text)
        _clean(text)


# -- real processes, read from /proc ------------------------------------------------------

_CHILD = textwrap.dedent(
    """
    import ctypes, sys, time
    ctypes.CDLL(None).prctl(15, b"\\x1b]0;pwn\\x07\\xe2\\x80\\xae", 0, 0, 0)  # PR_SET_NAME
    print(flush=True)
    time.sleep(60)
    """
)


@pytest.fixture
def renamed_process() -> Iterator[subprocess.Popen[bytes]]:
    """A process that named itself (comm, by prctl) and its argv[0] (as `exec -a` does)."""
    child = subprocess.Popen(
        ["\x1b]0;pwned\x07\u202e-sleeper", "-c", _CHILD, "arg" + HOSTILE.replace("\x00", "")],
        executable=sys.executable,
        stdout=subprocess.PIPE,
    )
    assert child.stdout is not None
    child.stdout.readline()
    yield child
    child.kill()
    child.wait(timeout=10)


@pytest.mark.parametrize("sampler", ["procfs", "psutil"])
def test_a_renamed_process_from_proc_is_shown_visibly(
    renamed_process: subprocess.Popen[bytes], sampler: str
) -> None:
    if sampler == "procfs":
        from gputui.sources.host.procfs import ProcfsHost

        host: object = ProcfsHost()
    else:
        from gputui.sources.host.source import HostSampler

        host = HostSampler()
    raw = GpuProcess(gpu_index=0, pid=renamed_process.pid, type="compute", gpu_memory=1 << 30)
    (proc,) = host.enrich([raw])  # type: ignore[attr-defined]
    assert proc.cmdline is not None and proc.name is not None
    assert proc.cmdline[0].startswith("^[]0;pwned^G\\u202e")
    assert proc.name.startswith("^[]0;pwn^G")  # comm, as the kernel keeps it
    snap = Snapshot(
        timestamp=time.time(),
        source="nvml",
        devices=(DeviceSnapshot(info=DeviceInfo(index=0, name="GPU")),),
        processes=(proc,),
    )
    _clean(render(snap, color=False))


# -- catalog ------------------------------------------------------------------------------


def test_catalog_text_shows_card_texts_visibly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUTUI_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "catalog"
    shutil.copytree(REPO / "catalog", root)
    cards = root / "cards" / "ada.toml"
    text = cards.read_text(encoding="utf-8")
    bad = HOSTILE.replace("\x00", "")
    for field in ("name", "source", "memory_type", "consistency_notes"):
        planted = f'{field} = "{json.dumps(bad)[1:-1]}'
        text = re.sub(rf'^{field} = "', lambda _m, p=planted: p, text, count=1, flags=re.M)
    cards.write_text(text, encoding="utf-8")
    first = re.search(r'^name = "(.*)"$', text, re.M)
    assert first is not None
    name = json.loads(f'"{first.group(1)}"')
    for argv in (
        ["catalog", "--catalog-dir", str(root)],
        ["catalog", "--catalog-dir", str(root), "show", name],
        ["catalog", "--catalog-dir", str(root), "compare", name, "RTX 3090"],
        ["catalog", "--catalog-dir", str(root), "show", name, "--json"],
    ):
        code, out, err = _run(argv)
        assert code == 0, err
        _clean(out)
        _clean(err)


# -- errors -------------------------------------------------------------------------------


def test_error_lines_show_what_they_quote_visibly(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(f"seed = 1\n{_toml('key' + HOSTILE)} = 1\n", encoding="utf-8")
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["snapshot", "--scenario", str(path)])
    assert code == 2
    _clean(err.getvalue())
    assert err.getvalue().count("\n") == 1
