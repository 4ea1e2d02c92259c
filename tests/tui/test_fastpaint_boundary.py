"""Only gputui.tui.fastpaint may touch Textual's private names.

Textual's private names change between releases without notice; keeping them in one
package (each piece with its equivalence test) is what lets a Textual upgrade be
checked in one place. This scan reads src/gputui and reports, outside tui/fastpaint/:

- an import of a private Textual module (`textual._x`) or a private name from one;
- in a class built on Textual classes: `self._x` or a method / class attribute `_x`
  where `_x` is one of the private names those Textual classes define (an override or a
  read of Textual's state; a gputui class's own `_x` that Textual does not have is fine);
- anywhere: `obj._x` on something other than `self`/`cls` (`super()._x`, `widget._x`,
  `self.app._x`) where `_x` is a private name of a Textual class and no gputui class
  defines `_x` itself.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from functools import cache
from pathlib import Path

import textual

SRC = Path(__file__).resolve().parents[2] / "src"
ALLOWED = SRC / "gputui" / "tui" / "fastpaint"

# Files allowed a private use outside fastpaint/ for now: none.
NOT_YET_MOVED: dict[str, set[str]] = {}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@cache
def _class_names(cls: type) -> frozenset[str]:
    """The private names a Textual class defines: its attributes and methods, and what its
    methods assign on self."""
    names = {n for n in vars(cls) if _private(n)}
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return frozenset(names)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and _private(node.attr)
        ):
            names.add(node.attr)
    return frozenset(names)


def _textual_bases(cls: type) -> list[type]:
    return [c for c in cls.__mro__ if c.__module__.split(".")[0] == "textual"]


@cache
def _all_textual_names() -> frozenset[str]:
    """Private names of every Textual class (for reads on objects other than self)."""
    names: set[str] = set()
    root = Path(textual.__file__).parent
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and _private(
                        item.name
                    ):
                        names.add(item.name)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and _private(node.attr)
            ):
                names.add(node.attr)
    return frozenset(names)


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted((SRC / "gputui").rglob("*.py")):
        if ALLOWED in path.parents:
            continue
        text = path.read_text(encoding="utf-8")
        if "textual" not in text:
            continue
        rel = path.relative_to(SRC)
        out.append((".".join(rel.with_suffix("").parts).removesuffix(".__init__"), path))
    return out


def _own_names(trees: list[ast.Module]) -> set[str]:
    """Private names gputui's own classes define (methods, or assigned on self)."""
    names: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _private(node.name):
                names.add(node.name)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
            ):
                names.add(node.attr)
    return names


def _class_objects(module: object, tree: ast.Module) -> dict[ast.ClassDef, type]:
    found: dict[ast.ClassDef, type] = {}

    def walk(body: list[ast.stmt], owner: object) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                cls = getattr(owner, node.name, None)
                if isinstance(cls, type):
                    found[node] = cls
                    walk(node.body, cls)

    walk(tree.body, module)
    return found


def private_uses() -> dict[str, set[str]]:
    """{file: private Textual names it uses}, for src/gputui outside tui/fastpaint/."""
    parsed = [
        (name, path, ast.parse(path.read_text(encoding="utf-8"))) for name, path in _modules()
    ]
    everything = _all_textual_names()
    own_elsewhere = _own_names([t for _, _, t in parsed])
    uses: dict[str, set[str]] = {}
    for module_name, path, tree in parsed:
        found: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("textual"):
                if any(_private(part) for part in (node.module or "").split(".")):
                    found.add(node.module or "")
                found.update(a.name for a in node.names if _private(a.name))
            elif isinstance(node, ast.Import):
                found.update(
                    a.name
                    for a in node.names
                    if a.name.startswith("textual") and any(map(_private, a.name.split(".")))
                )
        module = importlib.import_module(module_name)
        self_reads: set[int] = set()
        for class_node, cls in _class_objects(module, tree).items():
            textual_names: set[str] = set()
            for base in _textual_bases(cls):
                textual_names |= _class_names(base)
            for node in ast.walk(class_node):
                if (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Name)
                    and node.value.id in ("self", "cls")
                ):
                    self_reads.add(id(node))
                    if node.attr in textual_names:
                        found.add(node.attr)
            for item in class_node.body:
                defined = (
                    [item.name]
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                    else [
                        t.id
                        for t in getattr(item, "targets", [getattr(item, "target", None)])
                        if isinstance(t, ast.Name)
                    ]
                )
                found.update(n for n in defined if n in textual_names)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and id(node) not in self_reads
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
                # the standard library's own private-looking names (os._exit) are not Textual's
                and not (isinstance(node.value, ast.Name) and node.value.id in ("os", "sys"))
                and node.attr in everything
                and node.attr not in own_elsewhere
            ):
                found.add(node.attr)
        if found:
            uses[str(path.relative_to(SRC))] = found
    return uses


def test_no_private_textual_name_outside_fastpaint() -> None:
    uses = private_uses()
    unexpected = {
        path: sorted(names - NOT_YET_MOVED.get(path, set()))
        for path, names in uses.items()
        if names - NOT_YET_MOVED.get(path, set())
    }
    assert not unexpected, f"private Textual names outside tui/fastpaint/: {unexpected}"


def test_the_scan_sees_what_fastpaint_does() -> None:
    """The scan must find the private names fastpaint uses, were it outside fastpaint:
    otherwise the test above passes for not looking."""
    global ALLOWED
    kept = ALLOWED
    ALLOWED = SRC / "gputui" / "no-such-package"
    try:
        uses = private_uses()
    finally:
        ALLOWED = kept
    text_paint = uses["gputui/tui/fastpaint/text_paint.py"]
    assert {"_render_content", "_render_cache", "_RenderCache", "_dirty_regions"} <= text_paint
    assert {"_styles_cache", "_border_title"} <= uses["gputui/tui/fastpaint/box_lines.py"]
    table = uses["gputui/tui/fastpaint/table_lines.py"]
    assert {"textual._segment_tools", "_render_line", "_get_row_style", "_line_cache"} <= table
    assert {"_render_cell", "_row_locations", "_update_count"} <= uses[
        "gputui/tui/fastpaint/table_cells.py"
    ]
