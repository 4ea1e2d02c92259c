"""The Fit screen's open-file action (o): type the path of a models file to judge.

A path, not a file browser: a terminal user has the path in a shell already, and a
directory tree widget would walk whatever directory it is pointed at. The file is
checked to exist here; reading it is the fit pass's job (its errors show on the
Fit screen and the dashboard's fit line, one line each).
"""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from gputui.core import pathprobe
from gputui.core.errors import UserError
from gputui.core.textsafe import markup_safe


class OpenModelsScreen(ModalScreen[Path | None]):
    """Dismisses with the chosen file, or None (escape)."""

    DEFAULT_CSS = """
    OpenModelsScreen { align: center middle; }
    #open-models { width: 80; max-width: 100%; height: auto; border: thick $primary;
                   background: $surface; padding: 0 1; }
    #open-models-error { color: $error; height: auto; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def compose(self) -> ComposeResult:
        with Vertical(id="open-models"):
            yield Label(
                "Models file to judge: a models TOML, a Keras model, a Hugging Face config.json "
                "or a GGUF file; enter opens it, escape cancels"
            )
            yield Input(placeholder="~/models.toml", id="open-models-path")
            yield Label("", id="open-models-error")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if not text:
            return
        error = self.query_one("#open-models-error", Label)
        try:
            path = Path(text).expanduser()  # RuntimeError: "~nosuchuser/..."
            found = pathprobe.is_file(path)
        except (RuntimeError, UserError) as exc:  # a name too long, a link loop, ...
            error.update(markup_safe(str(exc)))
            return
        if not found:
            error.update(f"{markup_safe(pathprobe.short(path))}: no such file")
            return
        self.dismiss(path)

    def action_cancel(self) -> None:
        self.dismiss(None)
