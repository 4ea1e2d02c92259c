"""Drawing a widget's Rich Text straight into strips, for widgets redrawn every poll.

A widget whose `render()` returns a Rich `Text` is drawn by Textual through
its Content pipeline: the Text is converted to Content (every span's style
translated), wrapped, formatted and converted back to Rich segments, line by
line. For the GPU panels that was ~2 ms a panel and every panel changes each
poll (values, sparklines). The result, for what these widgets draw (no
wrapping, no links, no alignment, no selection, lines that fit the width), is
the Text's own segments with the widget's base style under them: Rich renders
those directly, ~10x cheaper. Anything outside that case (a line wider than
the widget, a selection, an alignment...) takes Textual's own path, so what is
drawn is the same either way; tests/tui/test_tui_text_lines.py compares both.

Overrides `Widget._render_content`, a private method: Textual is pinned to an
exact version (pyproject.toml) for this reason among others.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.strip import Strip
from textual.widget import Widget, _RenderCache

_NULL = Style.null()

# A segment's style is its own style over the widget's, plus the offset meta Textual's text
# selection reads. Building that (Style.from_meta pickles the meta, then two additions) was
# ~40 % of text_strips; the same (style, x, y) recur every poll, so they are kept. Bounded:
# the styles are the widgets' component styles, the offsets the screen's cells; cleared
# whole past the limit (a theme change or resize leaves old keys behind).
_OFFSET_STYLES: dict[tuple[Style, int, int], Style] = {}
_OFFSET_STYLES_MAX = 8192


def _with_offset(style: Style, x: int, y: int) -> Style:
    key = (style, x, y)
    found = _OFFSET_STYLES.get(key)
    if found is None:
        if len(_OFFSET_STYLES) >= _OFFSET_STYLES_MAX:
            _OFFSET_STYLES.clear()
        found = _OFFSET_STYLES[key] = style + Style.from_meta({"offset": (x, y)})
    return found


def text_strips(
    text: Text, width: int, height: int, base: Style, console: Console
) -> list[Strip] | None:
    """`text` as one Strip per line, each segment in `base` + its own style, with the
    offset meta Textual's text selection reads; None when only Textual's own path can
    say (a line wider than `width`, tabs, control codes or double-width characters)."""
    strips: list[Strip] = []
    line: list[Segment] = []
    x = y = 0
    combined: dict[Style | None, Style] = {}
    for segment in text.render(console):
        own = segment.style
        style = combined.get(own)
        if style is None:
            style = combined[own] = base + own if own is not None else base
        for n, piece in enumerate(segment.text.split("\n")):
            if n:
                strips.append(Strip(line, x))
                line, x, y = [], 0, y + 1
                if y >= height:
                    return strips
            if piece:
                if not piece.isprintable() or cell_len(piece) != len(piece):
                    return None
                line.append(Segment(piece, _with_offset(style, x, y)))
                x += len(piece)
                if x > width:
                    return None
    strips.append(Strip(line, x))
    return strips


class TextLines(Widget):
    """A widget whose `render()` returns a Rich Text; drawn by `text_strips` where it can be."""

    def _render_content(self) -> None:
        width, height = self.size
        visual_style = self.visual_style
        strips = None
        if (
            self.text_selection is None
            and self.styles.content_align == ("left", "top")
            and width > 0
        ):
            text = self.render()
            if isinstance(text, Text) and not text.style:
                strips = text_strips(text, width, height, visual_style.rich_style, self.app.console)
        if strips is None:
            super()._render_content()
            return
        self._render_cache = _RenderCache(self.size, strips)
        self._dirty_regions.clear()
