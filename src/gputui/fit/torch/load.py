"""Running the user's code: their factory, inputs and loss, named by FILE.py:NAME or
package.module:NAME.

The user's code runs (docs/fit.md says so). Only the file or module named is imported:
a FILE.py is loaded by its path under a private module name, and a module name is
looked up with the current directory taken off sys.path, so a stray ./torch.py or
./models.py is never picked up silently. An exception raised inside their code is
reported as theirs: one line naming their file and line (exit 2), no traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gputui.core.errors import UserError
from gputui.core.textsafe import visible

_LOADED: dict[str, Any] = {}


def resolve(ref: str, where: str, base_dir: str | None = None) -> tuple[Callable[..., Any], str]:
    """The callable `ref` names, and the file it came from (for error lines)."""
    target, _, name = ref.rpartition(":")
    if target.endswith(".py") or os.sep in target or "/" in target:
        path = Path(target)
        if not path.is_absolute() and base_dir is not None:
            path = Path(base_dir) / path
        module, origin = _load_file(path, where), str(path)
    else:
        module, origin = _load_module(target, where), target
        origin = getattr(module, "__file__", None) or origin
    found = getattr(module, name, None)
    if not callable(found):
        raise UserError(f"{where}: {visible(origin)} has no callable {name!r}")
    return found, str(origin)


def _load_file(path: Path, where: str) -> Any:
    if not path.is_file():
        raise UserError(f"{where}: {visible(str(path))}: no such file")
    key = str(path.resolve())
    if key in _LOADED:
        return _LOADED[key]
    mod_name = f"_gputui_user_{abs(hash(key)):x}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise UserError(f"{where}: {visible(str(path))}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module  # dataclasses and pickling look their module up
    with user_code(str(path), where):
        spec.loader.exec_module(module)
    _LOADED[key] = module
    return module


def _load_module(name: str, where: str) -> Any:
    if not all(part.isidentifier() for part in name.split(".")):
        raise UserError(f"{where}: {name[:80]!r} is not a module name")
    here = {"", ".", os.getcwd()}
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if p not in here]
    try:
        try:
            found = importlib.util.find_spec(name)
        except ModuleNotFoundError:  # a parent package is missing
            found = None
        if found is None:
            raise UserError(
                f"{where}: no module {name!r} (the current directory is not searched: name a "
                "local file as FILE.py:NAME)"
            )
        with user_code(name, where):
            return importlib.import_module(name)
    finally:
        sys.path[:] = saved


def call(fn: Callable[..., Any], origin: str, where: str, *args: Any) -> Any:
    """`fn(*args)`, an exception inside it reported as the user's (one line, exit 2)."""
    with user_code(origin, where):
        return fn(*args)


@contextmanager
def user_code(origin: str, where: str) -> Iterator[None]:
    """Turn an exception raised by the user's code into one line naming their file:line."""
    try:
        yield
    except UserError:
        raise
    except ModuleNotFoundError as e:
        if e.name == "torch":
            from gputui.fit.torch.spec import INSTALL_HINT

            raise UserError(INSTALL_HINT) from None
        raise UserError(f"{where}: {_where_in(e, origin)}: {_one_line(e)}") from None
    except Exception as e:  # the user's code: any exception is theirs
        raise UserError(f"{where}: {_where_in(e, origin)}: {_one_line(e)}") from None


def _where_in(e: BaseException, origin: str) -> str:
    """The deepest frame in the user's file, else the deepest outside gputui and torch."""
    frames = traceback.extract_tb(e.__traceback__)
    if isinstance(e, SyntaxError) and e.filename:
        return f"{visible(e.filename)}:{e.lineno}"
    mine = [f for f in frames if origin and os.path.abspath(f.filename) == os.path.abspath(origin)]
    if not mine:
        mine = [
            f for f in frames
            if "/gputui/" not in f.filename and "/torch/" not in f.filename
            and "importlib" not in f.filename
        ]  # fmt: skip
    if not mine:
        return visible(origin)
    f = mine[-1]
    return f"{visible(f.filename)}:{f.lineno}"


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return visible(f"{type(e).__name__}: {text[:300]}")
