"""Golden outputs of `gputui fit`: save them before a refactor, compare after.

    python scripts/fit_golden.py save DIR       # text and JSON of every case into DIR
    python scripts/fit_golden.py compare DIR    # the same cases now, against DIR
    python scripts/fit_golden.py compare DIR --upgrade   # DIR saved at an older schema_version

A case is one model file of examples/ or tests/fixtures/ with one set of flags
(a card, a mode); each writes `DIR/<case>.txt` (stdout, then the exit code and
stderr) and `DIR/<case>.json`. `compare` lists every case whose output
changed, with the first differing line, and exits 1 if any did. JSON is
compared after `json.loads`, with `schema_version` and the `gputui` version
left out, so a documented change of shape shows as what it is. With `--upgrade`
a saved older document is first moved into the current shape (schema_version 1 to 2
by scripts/fit_json_v1.py, 2 to 3 by scripts/fit_json_v2.py): every field it had must
be in the new document, equal,
and the fields the new one adds are listed once at the end.

The commands run in this process through `gputui.cli.main`, so the whole set
takes seconds, not a minute of interpreter starts.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CARD = ["--gpu", "RTX 3090"]
LLM_FLAGS: dict[str, list[str]] = {
    "default": [],
    "train-lora": ["--mode", "train", "--lora-rank", "16"],
    "generate": ["--mode", "generate", "--seq-len", "2048"],
}
IGNORED_KEYS = {"schema_version", "gputui_version", "version"}


def cases() -> Iterator[tuple[str, list[str]]]:
    """(case name, argv after `fit`) for every model file the project ships or tests."""
    yield "models-toml", [str(REPO / "examples" / "models.toml"), *CARD]
    yield "models-toml-all-cards", [str(REPO / "examples" / "models.toml"), "--all-cards"]
    for path in sorted((REPO / "examples" / "llm").glob("*.json")):
        for flag_name, flags in LLM_FLAGS.items():
            yield f"llm-{path.stem}-{flag_name}", [str(path), *CARD, *flags]
    for path in sorted((REPO / "tests" / "fixtures" / "gguf").glob("*.gguf")):
        for flag_name, flags in LLM_FLAGS.items():
            yield f"gguf-{path.stem}-{flag_name}", [str(path), *CARD, *flags]
    # the ranking of each kind: a transformer and a Keras file on every catalog card
    yield (
        "llm-llama-3-8b-all-cards",
        [str(REPO / "examples" / "llm" / "llama-3-8b.json"), "--all-cards"],
    )
    keras = REPO / "tests" / "fixtures" / "keras"
    yield "keras-mnist_convnet-all-cards", [str(keras / "mnist_convnet.json"), "--all-cards"]
    for path in sorted([*keras.glob("*.json"), *keras.glob("*.keras")]):
        if path.name.endswith(".counts.json"):
            continue
        yield f"keras-{path.name}", [str(path), *CARD]


def run(argv: list[str]) -> tuple[int, str, str]:
    from gputui.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(["fit", *argv])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    # the checkout's own path is not part of the answer: goldens compare across clones
    where = str(REPO)
    return code, out.getvalue().replace(where, "<repo>"), err.getvalue().replace(where, "<repo>")


def outputs(argv: list[str]) -> tuple[str, str]:
    """The text case (stdout, exit code, stderr) and the JSON case's stdout."""
    code, out, err = run(argv)
    text = f"{out}\n--- exit {code}\n{err}"
    jcode, jout, jerr = run([*argv, "--json"])
    return text, jout if jcode in (0, 1) else f"--- exit {jcode}\n{jerr}"


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in IGNORED_KEYS}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _json_equal(a: str, b: str) -> bool:
    try:
        return bool(_strip(json.loads(a)) == _strip(json.loads(b)))
    except ValueError:
        return a == b


def _first_difference(a: str, b: str) -> str:
    for n, (x, y) in enumerate(zip(a.splitlines(), b.splitlines(), strict=False), 1):
        if x != y:
            return f"line {n}: {x[:70]!r} -> {y[:70]!r}"
    return f"length {len(a.splitlines())} -> {len(b.splitlines())} lines"


def save(folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    for name, argv in cases():
        text, js = outputs(argv)
        (folder / f"{name}.txt").write_text(text, encoding="utf-8")
        (folder / f"{name}.json").write_text(js, encoding="utf-8")
        n += 1
    print(f"{n} cases saved in {folder}")
    return 0


def _upgraded_mismatch(old: str, new: str, added: set[str]) -> str | None:
    """Where a v1 document, moved to the v2 shape, differs from the v2 one now (or None)."""
    from fit_json_v1 import added_paths, mismatch, upgrade
    from fit_json_v2 import upgrade as upgrade_v2

    try:
        before, now = _strip(json.loads(old)), _strip(json.loads(new))
    except ValueError:  # an error case: its stderr, compared as text
        return None if old == new else _first_difference(old, new)
    version = json.loads(old).get("schema_version")
    moved = upgrade(before) if version == 1 else before
    moved = upgrade_v2(moved) if version in (1, 2) else moved
    found = mismatch(moved, now)
    if found is None:
        added |= added_paths(moved, now)
    return found


def compare(folder: Path, upgrade: bool = False) -> int:
    changed = same = missing = upgraded = 0
    added: set[str] = set()
    for name, argv in cases():
        text_path, json_path = folder / f"{name}.txt", folder / f"{name}.json"
        if not text_path.is_file():
            print(f"new      {name}")
            missing += 1
            continue
        text, js = outputs(argv)
        old_text = text_path.read_text(encoding="utf-8")
        old_json = json_path.read_text(encoding="utf-8")
        if text != old_text:  # and its JSON is still compared: a table's new columns
            print(f"changed  {name}.txt  {_first_difference(old_text, text)}")
            changed += 1
        if _json_equal(old_json, js):
            same += 1
        elif not upgrade:
            print(f"changed  {name}.json  {_first_difference(old_json, js)}")
            changed += 1
        elif (where := _upgraded_mismatch(old_json, js, added)) is not None:
            print(f"changed  {name}.json  after the upgrade to the new shape: {where}")
            changed += 1
        else:
            upgraded += 1
    if upgrade:
        print(f"fields added by the new shape: {', '.join(sorted(added)) or 'none'}")
        print(
            f"{same} identical, {upgraded} the same after the upgrade, {changed} changed, {missing} new"
        )
    else:
        print(f"{same} identical, {changed} changed, {missing} new")
    return 1 if changed or missing else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("save", "compare"))
    parser.add_argument("folder", type=Path)
    parser.add_argument(
        "--upgrade",
        action="store_true",
        help="compare: move a saved older JSON into the current shape first",
    )
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO / "src"))
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # fit_json_v1
    return save(args.folder) if args.action == "save" else compare(args.folder, args.upgrade)


if __name__ == "__main__":
    raise SystemExit(main())
