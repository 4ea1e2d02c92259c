"""One table column: what a cell shows and what it sorts by, for any kind of row.

Shared by the process table (rows are GpuProcess) and the cluster tables (host facts,
GPU rows), so a column means the same thing in both; free of Textual.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

R = TypeVar("R")
SORT_ARROW = 2  # " ▼" after the sorted column's label: every column has room for it


@dataclass(frozen=True)
class Column(Generic[R]):
    key: str
    label: str
    cell: Callable[[R], str]
    sort: Callable[[R], Any]
    right: bool = False
    width: int = 0  # 0: no fixed width (the process table's command takes what is left)
    drop: int = 0  # order in which columns give way on a narrow terminal (0: never)
    hide_empty: bool = False  # hidden while its cell is empty on every row

    @property
    def room(self) -> int:
        """Cells for the values and for the label with its sort arrow."""
        return max(self.width, len(self.label) + SORT_ARROW)
