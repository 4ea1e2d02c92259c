"""A widget that draws its Rich Text lines the cheap way, and keeps its component styles.

The drawing itself (what is private to Textual) is fastpaint's: `TextPaint` draws the
content, `BoxPaint` the lines around it.
"""

from __future__ import annotations

from typing import Any

from rich.style import Style

from gputui.tui.fastpaint.box_lines import BoxPaint
from gputui.tui.fastpaint.text_paint import TextPaint


class TextLines(TextPaint, BoxPaint):
    """A widget whose `render()` returns a Rich Text; drawn by `text_strips` where it can be.

    Also keeps its component styles (`component_style`): these widgets look them up for
    every piece of text every poll, and each lookup walks the CSS (~12 % of a refresh).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._kept_styles: dict[tuple[object, ...], Style] = {}

    def style_state(self) -> tuple[object, ...]:
        """What the component styles depend on besides their names: the theme (a
        subclass adds the classes its CSS selects on)."""
        return (self.app.theme,)

    def component_style(self, name: str) -> Style:
        """`get_component_rich_style(name)`, kept per `style_state()`."""
        key = (name, *self.style_state())
        style = self._kept_styles.get(key)
        if style is None:
            style = self._kept_styles[key] = self.get_component_rich_style(name)
        return style

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._kept_styles.clear()  # a CSS change: the kept styles may be stale
