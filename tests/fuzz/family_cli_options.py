"""Fuzz family "cli_options": every subcommand's options with hostile values.

A case is one command line: a command (the dashboard, snapshot, catalog, fit,
exporter, watch) with one to three of its options set to hostile values: numbers
(NaN, infinities, thousands of digits, `²`, negatives, hex), strings (control
characters, bidi overrides, undecodable bytes as the shell hands them over,
100,000 characters) and paths (a FIFO, /dev/zero, a folder, a non-UTF-8 file,
a sparse 40 MiB file, a symlink loop, a 5,000-character name). It runs in
process (`gputui.cli.main`) with standard streams like the real ones (stdout
strict UTF-8, stderr backslash-replacing) and is judged as the user sees it:

- exit 2 with one line on stderr and nothing on stdout: rejected (argparse's
  own usage error, `usage:` lines then one `error:` line, counts as one);
- exit 0 or 1 with output: accepted, a wrong accept when a value that must be
  refused (a hazardous file, a number out of any range) was planted;
- the exporter getting as far as serving (its serve loop is replaced by a
  stop) or the dashboard as far as its terminal check: accepted, judged the same;
- a control character on either stream, or any other exit: a wrong accept.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any

import generators as gen

FAMILY = "cli_options"
MODELS = str(Path(__file__).resolve().parent / "prometheus_models.toml")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
TERMINAL_LINE = "the dashboard needs a terminal"

NUMBERS_BAD = ["nan", "NaN", "inf", "-inf", "1e309", "-1e309", "9" * 5000, "-" + "9" * 400,
               "\u00b2", "\u0661", "0x10", "1_000", "", " ", "1e", "--", "-1", "-0.5"]  # fmt: skip
NUMBERS_ODD = ["0", "1", "0.0001", "3600", "65536", "1e-320", "2147483648", "7"]
STRINGS_BAD = ["\x1b[2J", "\x1b]0;pwned\x07", "a\u202eb", "\u2066x\u2069", "\x9b31m", "x\ry",
               "\udcff\udcfe", "caf\udce9", "\x07", "a\nb", "\t"]  # fmt: skip
STRINGS_ODD = ["", " ", "-", "--", "x" * 100_000, "x" * 300, "[red]x[/red]", "${HOME}",
               "é", "../../etc/passwd", "a,b,,c", "=", "name=1,2", "o/" + "n" * 5000]  # fmt: skip
PATHS_BAD = ["fifo", "/dev/zero", "not-utf8", "huge", "folder", "loop", "/dev/null"]
PATHS_ODD = ["missing\x1b[2J", "long", "\udcffname", "missing", "ok-models"]

# command words -> {option: value kind}; "FILE" options take paths.
COMMANDS: dict[str, dict[str, str]] = {
    # check and report, from their own words: check polls simulated GPUs (--source demo)
    "check": {"--min-free": "string", "--max-temp": "number", "--gpu": "number",
              "--scenario": "path"},
    "report": {"": "path", "--since": "string", "--until": "string", "--pid": "number",
               "--csv": "path"},
    "": {"--interval": "number", "--source": "string", "--scenario": "path", "--only": "string",
         "--models": "path", "--match": "string"},
    "snapshot": {"--scenario": "path", "--match": "string"},
    "catalog": {"--arch": "string", "--sort": "string"},
    "catalog show": {"": "string"},
    "catalog match": {"": "string", "--memory-mib": "number", "--cc": "string"},
    "catalog compare": {"": "string"},
    "fit": {"": "path", "--gpu": "string", "--index": "number", "--batch-size": "number",
            "--precision": "string", "--model": "string", "--input-shape": "string",
            "--seq-len": "number", "--new-tokens": "number", "--weights": "string",
            "--paged": "number", "--prefill-chunk": "number", "--lora-rank": "number",
            "--lora-alpha": "number", "--lora-targets": "string", "--grad-accum": "number",
            "--gpus": "number", "--tp": "number", "--pp": "number", "--kv-dtype": "string",
            "--budget": "number"},
    "exporter": {"--listen": "string", "--scenario": "path", "--interval": "number",
                 "--hostname": "string", "--models": "path", "--tls-cert": "path",
                 "--tls-key": "path", "--tls-client-ca": "path", "--basic-auth-file": "path"},
    # one poll (--polls is not drawn: a large one would run for hours)
    "watch": {"--alerts": "path", "--interval": "number", "--scenario": "path",
              "--exec": "string", "--exec-timeout": "number", "--webhook": "string",
              "--webhook-timeout": "number"},
}  # fmt: skip
# The commands with the most options are drawn most often.
WEIGHTS = {"": 2, "snapshot": 1, "fit": 4, "exporter": 4, "watch": 2}
# Values no option may take: planted, they must be refused.
MUST_REFUSE_NUMBERS = {"nan", "NaN", "inf", "-inf", "1e309", "-1e309", "\u00b2",
                       "0x10", "", " ", "1e", "--", "9" * 5000, "-" + "9" * 400}  # fmt: skip
MUST_REFUSE_PATHS = {"fifo", "/dev/zero", "not-utf8", "huge", "folder", "loop", "/dev/null"}
# Options where a control character must be refused, not shown: a label gputui exports.
MUST_REFUSE_STRINGS = {"--hostname"}
# Options that need a certificate and key beside them.
TLS_PAIR = {"--tls-cert", "--tls-key", "--tls-client-ca", "--basic-auth-file"}


@dataclass
class Case:
    command: str
    options: list[tuple[str, str, str]] = field(default_factory=list)  # (option, kind, value)

    def planted_refusal(self) -> str | None:
        """The first planted value the command must refuse, or None."""
        for option, kind, value in self.options:
            if kind == "number" and value in MUST_REFUSE_NUMBERS:
                return f"{option or 'positional'} = {value[:20]!r}"
            if kind == "path" and value in MUST_REFUSE_PATHS:
                return f"{option or 'positional'} = {value} file"
            if option in MUST_REFUSE_STRINGS and _CONTROL.search(value):
                return f"{option} = {value[:20]!r}"
            if option == "--listen" and value not in ("127.0.0.1:0",):
                return f"--listen = {value[:20]!r}"
        return None


def _value(rng: Random, kind: str) -> str:
    bad = rng.random() < 0.7
    pools = {
        "number": (NUMBERS_BAD, NUMBERS_ODD),
        "string": (STRINGS_BAD, STRINGS_ODD),
        "path": (PATHS_BAD, PATHS_ODD),
    }[kind]
    pool = pools[0] if bad else pools[1]
    value = rng.choice(pool)
    if kind == "string" and bad and rng.random() < 0.5:
        value = rng.choice(STRINGS_ODD[:4] + ["x", "A100", "9835"]) + value
    return value


def make_case(rng: Random) -> Case:
    command = rng.choices(list(COMMANDS), weights=[WEIGHTS.get(c, 1) for c in COMMANDS])[0]
    options = COMMANDS[command]
    chosen = rng.sample(list(options), k=min(len(options), rng.randint(1, 3)))
    case = Case(command)
    for option in chosen:
        case.options.append((option, options[option], _value(rng, options[option])))
    return case


def case_text(case: Case) -> str:
    return repr((case.command, case.options))


def _files(workdir: Path) -> dict[str, str]:
    """The hostile files, made once per folder."""
    folder = workdir / "files"
    names = {
        "fifo": str(folder / "fifo.toml"),
        "not-utf8": str(folder / "not-utf8.toml"),
        "huge": str(folder / "huge.toml"),
        "folder": str(folder / "dir.toml"),
        "loop": str(folder / "loop.toml"),
        "long": str(folder / ("n" * 5000)),
        "\udcffname": str(folder / "\udcffname.toml"),
        "missing": str(folder / "missing.toml"),
        "missing\x1b[2J": str(folder / "missing\x1b[2J.toml"),
        "ok-models": MODELS,
    }
    if not folder.exists():
        folder.mkdir()
        os.mkfifo(names["fifo"])
        Path(names["not-utf8"]).write_bytes(b'name = "\xff\xfe caf\xe9"\n')
        with open(names["huge"], "wb") as handle:
            handle.truncate(40 << 20)
        os.mkdir(names["folder"])
        os.symlink("loop.toml", names["loop"])
        for name in ("not-utf8", "huge"):
            os.chmod(names[name], 0o600)
    return names


def argv_of(case: Case, workdir: Path) -> list[str]:
    files = _files(workdir)
    argv = case.command.split()
    positional: list[str] = []
    named = {option for option, _, _ in case.options}
    for option, kind, value in case.options:
        text = files.get(value, value) if kind == "path" else value
        if option:
            argv += [f"{option}={text}"] if text.startswith("-") else [option, text]
        else:
            positional.append(text)
    if case.command == "":
        argv.insert(0, "--demo")
    if case.command == "snapshot":
        argv.append("--demo")
    if case.command == "check":
        argv[1:1] = ["--source", "demo"]
    if case.command == "report" and not positional:
        positional.append(MODELS)  # not a recording: refused, after its options are read
    if case.command == "exporter":
        argv[1:1] = ["--source", "demo"]
        if "--listen" not in named:
            argv += ["--listen", "127.0.0.1:0"]
        if named & TLS_PAIR:  # a partner for the TLS options, so the planted one is reached
            for partner in ("--tls-cert", "--tls-key"):
                if partner not in named:
                    argv += [partner, files["ok-models"]]
    if case.command == "watch":
        argv[1:1] = ["--source", "demo", "--polls", "1"]
        if "--alerts" not in named:  # a TOML file without [alerts]: the default rules
            argv += ["--alerts", files["ok-models"]]
    if case.command == "fit" and not positional:
        positional.append(MODELS)
    if case.command.startswith("catalog ") and not positional:
        positional.append("A100")
    return [*argv, "--", *positional] if positional else argv


class _Started(BaseException):
    """The exporter got as far as serving."""


def _patched_exporter() -> None:
    from gputui.exporter import server

    def stop(_self: Any) -> None:
        raise _Started

    server.MetricsServer.serve_forever = stop  # type: ignore[method-assign]


def _streams() -> tuple[io.TextIOWrapper, io.TextIOWrapper]:
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace")
    return out, err


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    raw = stream.buffer.getvalue()  # type: ignore[attr-defined]
    return str(raw.decode("utf-8"))


def run_case(case: Case, workdir: Path) -> gen.Outcome:
    from gputui.cli import main

    _patched_exporter()
    argv = argv_of(case, workdir)
    out, err = _streams()
    started = False
    old_cwd = os.getcwd()
    os.chdir(workdir)  # no ./gputui.toml of the repository's
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse's usage error
                code = exc.code if isinstance(exc.code, int) else 2
            except _Started:
                started, code = True, 0
    finally:
        os.chdir(old_cwd)
    stdout, stderr = _text(out), _text(err)
    for stream, text in (("stdout", stdout), ("stderr", stderr)):
        found = _CONTROL.search(text)
        if found:
            return gen.Outcome("wrong-accept", f"control character in {stream} | {found.group()!r}")
    planted = case.planted_refusal()
    lines = stderr.splitlines()
    accepted = started or (code == 2 and len(lines) == 1 and TERMINAL_LINE in lines[0])
    if not accepted and code == 2:
        usage = lines[:-1] and all(not line.startswith("gputui") for line in lines[:-1])
        if stdout or not lines or (len(lines) > 1 and not (usage and "error:" in lines[-1])):
            return gen.Outcome("wrong-accept", f"exit 2 without one line | {stderr[:160]!r}")
        return gen.Outcome("rejected", lines[-1][:160])
    if not accepted and code not in (0, 1):
        return gen.Outcome("wrong-accept", f"exit {code} | {stderr[:160]!r}")
    if planted is not None:
        return gen.Outcome("wrong-accept", f"accepted {planted.split(' = ')[0]} | {planted}")
    return gen.OK
