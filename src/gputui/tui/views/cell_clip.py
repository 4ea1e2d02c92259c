"""What Rich draws for a one-line, unstyled cell text: Textual-free, so fastpaint's table
path and its tests share one definition."""

from __future__ import annotations


def clipped(plain: str, width: int, justify: str) -> str | None:
    """What Rich draws for a one-line, unstyled Text with ellipsis overflow in `width` cells.

    None where only Rich can say: anything but printable ASCII (wide characters,
    control codes, line breaks) or no room at all.
    """
    if width < 1 or not (plain.isascii() and plain.isprintable()):
        return None
    if justify == "right":
        plain = plain.rstrip()
    if not plain:  # Rich emits an extra empty segment for empty text
        return None
    if len(plain) > width:
        plain = plain[: width - 1] + "…"
    return plain.rjust(width) if justify == "right" else plain.ljust(width)
