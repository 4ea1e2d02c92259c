"""The Fit screen with `kind = "transformer"` models, driven as a user drives it: `f`, the
arrow keys, the detail view (transformers in the TUI Fit screen)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from textual.widgets import DataTable, Static

from gputui.fit import TransformerCheck
from gputui.tui.app import GpuTuiApp
from gputui.tui.screens.fit import FitScreen
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
LLAMA3 = ROOT / "examples" / "llm" / "llama-3-8b.json"

MODELS = f"""
[[model]]
name = "tiny"
input_shape = [4]
layers = [ {{ type = "Dense", units = 2 }} ]

[[model]]
name = "llama-lora"
kind = "transformer"
hf_config = "{LLAMA3}"
mode = "train"
lora_rank = 16
grad_checkpointing = true
"""


def _text(static: Static) -> str:
    console = Console(width=200, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(static.content)
    return console.export_text()


async def test_transformer_rows_and_detail(
    tmp_path: Path, scripted_source: Any, snapshot_factory: Any, device_factory: Any
) -> None:
    models = tmp_path / "models.toml"
    models.write_text(MODELS)
    gib = 1 << 30
    scripted_source.next_snapshot = snapshot_factory(
        2,
        devices=(
            device_factory(0, memory_free=20 * gib),  # RTX 3090, 24 GiB
            device_factory(1, memory_free=76 * gib),  # A100 80 GB
        ),
    )
    app = GpuTuiApp(
        scripted_source, interval=0.05, clock=lambda: "01:02:03", card_lookup=None,
        models_path=models,
    )  # fmt: skip
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        await pilot.press("f")
        screen = app.screen
        assert isinstance(screen, FitScreen)
        await wait_for(pilot, lambda: screen.passes > 0 and not screen.busy and screen.checks)
        assert screen.error is None
        table = screen.query_one("#fit-table", DataTable)
        rows = [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]
        assert table.row_count == 4  # 2 models x 2 GPUs
        llama = {r[1]: r for r in rows if r[0] == "llama-lora"}
        # RTX 3090 (24 GiB, 20 free): a ~20.4 GiB LoRA run fits in total but not right now
        r3090 = llama["0: RTX 3090"]
        assert r3090[2] == "does not fit" and r3090[3] in ("fits", "tight")
        assert r3090[5] == "bf16" and r3090[6].endswith("GiB")
        a100 = next(r for k, r in llama.items() if k.startswith("1:"))
        largest = int(a100[4].split()[0].replace(",", ""))  # "14 (8)": largest, its power of 2
        assert a100[2] == "fits" and largest >= 2  # the largest batch in the free memory
        check = next(
            c for c in screen.checks if isinstance(c, TransformerCheck) and c.target.index == 1
        )
        assert check.chosen.max_batch_size_free == largest
        # the user walks down to the transformer row on the A100 and reads its detail
        target = rows.index(a100)
        for _ in range(target):
            await pilot.press("down")
        detail = screen.query_one("#fit-detail", Static)
        await wait_for(pilot, lambda: "llama-lora" in _text(detail))
        text = _text(detail)
        assert "LoRA r=16 on q,k,v,o (13,631,488 trainable)" in text
        assert "Memory at the peak" in text and "optimizer state" in text
        assert "longest context" in text
        assert f"{check.chosen.longest_context:,}" in text
        # the card ranking comes from the worker's pass, as for layer models
        await wait_for(pilot, lambda: "llama-lora" in screen.result.rankings)
        await pilot.press("up")
        await pilot.press("down")
        await wait_for(pilot, lambda: "cards needed" in _text(detail) and "H100" in _text(detail))


async def test_both_kinds_show_one_ranking_table(
    tmp_path: Path, scripted_source: Any, snapshot_factory: Any, device_factory: Any
) -> None:
    """A layer model's detail and a transformer's show the same ranking columns (the
    CLI's), each throughput in its own unit, with per-dollar for both kinds."""
    models = tmp_path / "models.toml"
    models.write_text(MODELS)
    scripted_source.next_snapshot = snapshot_factory(1, devices=(device_factory(0),))
    app = GpuTuiApp(
        scripted_source, interval=0.05, clock=lambda: "01:02:03", card_lookup=None,
        models_path=models,
    )  # fmt: skip
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        await pilot.press("f")
        screen = app.screen
        assert isinstance(screen, FitScreen)
        await wait_for(pilot, lambda: {"tiny", "llama-lora"} <= set(screen.result.rankings))
        texts = {}
        for c in screen.checks:
            console = Console(width=260, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
            console.print(screen.detail(c))
            texts[c.model.name] = console.export_text()
    tiny, llama = texts["tiny"], texts["llama-lora"]
    for text in (tiny, llama):
        assert "Other cards (top 10)" in text and "per $1k launch" in text
    assert "samples/s (rough)" in tiny and "cards needed" not in tiny
    assert "train tok/s (rough)" in llama and "cards needed" in llama
