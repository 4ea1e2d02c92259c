"""A Static that repaints only when its text changed, and relayouts only when asked.

`Static.update` relayouts the whole screen by default; at one update per value
per GPU per second that relayout was most of the dashboard's CPU time.

Its Rich Text is drawn by fastpaint's `TextPaint` where the lines fit (the
header and the process details change every second: Textual's Content
pipeline cost ~0.4 ms a line), else by Static's own path.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from gputui.tui.fastpaint.text_paint import TextPaint


class Field(TextPaint, Static):
    def __init__(
        self, text: str | Text = "", *, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(text, id=id, classes=classes)
        self._shown: str | Text = text

    def show(self, text: str | Text, *, layout: bool = False) -> None:
        if text == self._shown:
            return
        if isinstance(text, str):
            text = Text(
                text, no_wrap=True, end=""
            )  # literal: no markup parsing of commands or names
        if isinstance(self._shown, Text) and isinstance(text, Text) and text == self._shown:
            return
        # A change in line count changes the widget's height: that one needs a layout.
        lines = text.plain.count("\n")
        old_lines = (self._shown.plain if isinstance(self._shown, Text) else self._shown).count(
            "\n"
        )
        self._shown = text
        self.update(text, layout=layout or lines != old_lines)

    def painted_text(self) -> object:
        return self.content
