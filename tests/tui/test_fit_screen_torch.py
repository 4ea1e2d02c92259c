"""The Fit screen opens a models file's `kind = "torch"` table: the user's module is
traced and judged on every GPU like a layer model (skipped without torch)."""

from __future__ import annotations

from pathlib import Path

from demo_driving import app_for, ready

from gputui.fit.torch.spec import TorchSpec
from gputui.tui.screens.fit import FitScreen
from tests.torch_required import require_torch
from tests.waiting import wait_for

require_torch()

RESNET = Path(__file__).resolve().parents[2] / "examples" / "torch" / "resnet.py"


async def test_fit_screen_judges_a_torch_table(tmp_path: Path) -> None:
    models = tmp_path / "models.toml"
    models.write_text(
        "[[model]]\n"
        'name = "small-resnet"\n'
        'kind = "torch"\n'
        f'torch = "{RESNET}:build_small"\n'
        'input_shape = ["3,32,32"]\n'
        "batch_size = 8\n"
        'precision = "fp32"\n'  # one precision: one way of running it is traced
    )
    app = app_for(None, models_path=models)
    async with app.run_test(size=(160, 50)) as pilot:
        await ready(pilot, fit=False)
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, FitScreen))
        fit = app.screen
        assert isinstance(fit, FitScreen)
        await wait_for(pilot, lambda: bool(fit.rows) or fit.result.error is not None, timeout=120)
        assert fit.result.error is None, fit.result.error
        assert len(fit.models) == 1 and isinstance(fit.models[0], TorchSpec)
        rows = [
            r for r in fit.rows if getattr(getattr(r, "model", None), "name", "") == "small-resnet"
        ]
        assert rows, fit.rows
        # the traced module's parameters (ResNet-50's layout at a sixteenth of the width)
        assert rows[0].model.params == 130_962
        assert rows[0].chosen.peak_bytes > rows[0].model.params * 4
