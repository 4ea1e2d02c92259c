"""The command line's SIZE (`check --min-free`) and time (`report --since/--until`) parsers:
any text is a bounded number or one UserError line naming the option, never another
exception, never a control character in the message."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from properties import bounded

from gputui.core.errors import UserError
from gputui.core.quantities import MAX_SIZE, MAX_TIMESTAMP, parse_size, parse_when

START, END = 1_800_000_000.0, 1_800_086_400.0
UNITS = ["", "B", "K", "M", "G", "T", "KiB", "MiB", "GiB", "TiB", "KB", "MB", "GB", "TB", "x"]
# pieces that come close to the accepted forms, and hostile ones
SIZE_TEXT = st.one_of(
    st.text(max_size=40),
    st.builds(
        lambda n, sp, u: f"{n}{sp}{u}",
        st.one_of(st.integers(-5, 10**25).map(str), st.floats(allow_nan=True).map(repr)),
        st.sampled_from(["", " ", "  ", "\t"]),
        st.sampled_from(UNITS),
    ),
)
WHEN_TEXT = st.one_of(
    st.text(max_size=40),
    st.builds(
        lambda sign, parts: sign + "".join(parts),
        st.sampled_from(["-", "+", "", "--"]),
        st.lists(
            st.builds(
                lambda n, u: f"{n}{u}",
                st.one_of(st.integers(0, 10**12).map(str), st.floats(0, 1e9).map(repr)),
                st.sampled_from(["s", "m", "h", "d", "w", "y", ""]),
            ),
            max_size=4,
        ),
    ),
    st.datetimes().map(lambda d: d.isoformat()),
    st.datetimes().map(lambda d: d.isoformat(sep=" ") + "Z"),
)


def _one_line(exc: UserError, option: str) -> None:
    text = str(exc)
    assert text.startswith(f"{option}: ") and "\n" not in text
    assert all(c.isprintable() for c in text), text


@bounded(400)
@given(text=SIZE_TEXT)
def test_a_size_is_bounded_bytes_or_one_line(text: str) -> None:
    try:
        size = parse_size(text, "--min-free")
    except UserError as exc:
        _one_line(exc, "--min-free")
        return
    assert isinstance(size, int) and 0 <= size <= MAX_SIZE


@bounded(400)
@given(text=WHEN_TEXT)
def test_a_time_is_a_bounded_timestamp_or_one_line(text: str) -> None:
    try:
        when = parse_when(text, "--since", start=START, end=END)
    except UserError as exc:
        _one_line(exc, "--since")
        return
    assert math.isfinite(when)
    stripped = text.strip()
    if stripped[:1] in "+-" and stripped[1:2].isdigit():  # an offset from the span
        assert START <= when <= START + 3.2e9 or END - 3.2e9 <= when <= END
    else:
        assert 0 <= when <= MAX_TIMESTAMP


@pytest.mark.parametrize(
    ("text", "size"),
    [("10GiB", 10 << 30), ("512 MiB", 512 << 20), ("8G", 8 << 30), ("80GB", 80 * 10**9),
     ("1.5 GiB", 3 << 29), ("4096", 4096), ("2k", 2048)],
)  # fmt: skip
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text, "--min-free") == size


@pytest.mark.parametrize(
    ("text", "when"),
    [("-2h", END - 7200), ("-1h30m", END - 5400), ("+30m", START + 1800), ("-1d", END - 86400),
     ("2027-01-15T08:00:00Z", 1_800_000_000.0), ("2027-01-15 09:00:00+01:00", 1_800_000_000.0)],
)  # fmt: skip
def test_times(text: str, when: float) -> None:
    assert parse_when(text, "--since", start=START, end=END) == when
