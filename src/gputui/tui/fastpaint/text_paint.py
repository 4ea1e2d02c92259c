"""Drawing a widget's Rich Text straight into its render cache, for widgets redrawn every poll.

A widget whose `render()` returns a Rich `Text` is drawn by Textual through
its Content pipeline: the Text is converted to Content (every span's style
translated), wrapped, formatted and converted back to Rich segments, line by
line. For the GPU panels that was ~2 ms a panel and every panel changes each
poll (values, sparklines). The result, for what these widgets draw (no
wrapping, no links, no alignment, no selection, lines that fit the width), is
the Text's own segments with the widget's base style under them: Rich renders
those directly, ~10x cheaper. Anything outside that case (a line wider than
the widget, a selection, an alignment...) takes Textual's own path, so what is
drawn is the same either way; tests/tui/test_fastpaint_text_paint.py compares both.

Overrides `Widget._render_content` and writes `_render_cache`, private to Textual: that is
why it lives in fastpaint/ (Textual is pinned to an exact version for it).
"""

from __future__ import annotations

from collections.abc import Iterable

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


def _segments(text: Text, console: Console) -> Iterable[Segment]:
    """`text.render(console)`, without its span sorting and style stack where the spans are
    Style objects in order, none overlapping (the panels' lines but for warnings): then
    each span's text is drawn in its own style and the gaps in the null style, which is
    what Rich's stack yields for them."""
    spans = text.spans
    plain = text.plain
    end = 0
    for span in spans:
        if span.start < end or not isinstance(span.style, Style) or span.end > len(plain):
            return text.render(console)
        end = span.end
    if text.style or not spans:
        return text.render(console)
    out: list[Segment] = []
    pos = 0
    for span in spans:
        if span.start > pos:
            out.append(Segment(plain[pos : span.start], _NULL))
        if span.end > span.start:
            out.append(Segment(plain[span.start : span.end], span.style))  # type: ignore[arg-type]
        pos = max(pos, span.end)
    if pos < len(plain):
        out.append(Segment(plain[pos:], _NULL))
    return out


def text_strips(
    text: Text, width: int, height: int, base: Style, console: Console
) -> list[Strip] | None:
    """`text` as one Strip per line, each segment in `base` + its own style, with the
    offset meta Textual's text selection reads; None when only Textual's own path can
    say (a line wider than `width`, tabs, control codes, double-width characters or a
    colour given by name)."""
    for span in text.spans:
        if isinstance(span.style, str):
            # A colour by name ("red") is one that Textual's path maps to the terminal's
            # palette differently from Rich: only that path can say how it is drawn.
            named = console.get_style(span.style)
            if named.color is not None or named.bgcolor is not None:
                return None
    strips: list[Strip] = []
    line: list[Segment] = []
    x = y = 0
    combined: dict[Style | None, Style] = {}
    for segment in _segments(text, console):
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


def draw_text(widget: Widget, text: object) -> bool:
    """Draw `text` (what the widget renders) into its render cache by `text_strips`; False,
    drawing nothing, where only Textual's own path can say (then the caller takes it)."""
    width, height = widget.size
    if (
        widget.text_selection is not None
        or widget.styles.content_align != ("left", "top")
        or width <= 0
        or not isinstance(text, Text)
        or text.style
        or text.justify not in (None, "default", "left")  # aligned text: Textual's to lay out
    ):
        return False
    strips = text_strips(text, width, height, widget.visual_style.rich_style, widget.app.console)
    if strips is None:
        return False
    widget._render_cache = _RenderCache(widget.size, strips)
    widget._dirty_regions.clear()
    return True


class TextPaint(Widget):
    """A mixin for a Widget (or a Static) whose content is a Rich Text: drawn by
    `draw_text` where it can be, by the base class's own path elsewhere."""

    def painted_text(self) -> object:
        """What the widget draws: `render()`'s result (a Static says its content)."""
        return self.render()

    def content_drawn(self) -> None:
        """Called after each drawing of the content, whichever path drew it."""

    def _render_content(self) -> None:
        if not (self.size.width > 0 and draw_text(self, self.painted_text())):
            super()._render_content()
        self.content_drawn()
