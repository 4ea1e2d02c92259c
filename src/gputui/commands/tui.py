"""`gputui` with no subcommand: the live dashboard.

`fast_args` reads the dashboard's commonest command lines without argparse (see
there); argparse is imported only by cli.build_parser, for everything else.
"""

from __future__ import annotations

import sys

from gputui.commands import add_source_arguments, checked_scenario, open_given_source, path_arg
from gputui.sources import registry

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    import argparse
    from pathlib import Path
    from types import SimpleNamespace

    from gputui.alerts.rules import Rule
    from gputui.sources.base import Source
    from gputui.tui.first_poll import FirstPoll

SOURCES = registry.choices()  # --source's choices, for argparse and fast_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser)
    parser.add_argument("--demo", action="store_true", help="same as --source demo")
    parser.add_argument(
        "--interval", type=float, default=1.0, help="refresh interval in seconds (default 1)"
    )
    parser.add_argument(
        "--readonly", action="store_true", help="hide every action that changes the system"
    )
    parser.add_argument("--only", metavar="LIST", help="show only these GPUs, by index: --only 0,2")
    parser.add_argument(
        "--respect-cuda-visible-devices",
        action="store_true",
        help="show only the GPUs CUDA_VISIBLE_DEVICES names (indices in NVML's order, or UUIDs)",
    )
    parser.add_argument(
        "--no-config",
        action="store_true",
        help="neither read nor write the saved dashboard settings (settings.toml)",
    )
    parser.add_argument(
        "--record",
        type=path_arg,
        metavar="FILE",
        help="also record every poll to FILE while the dashboard runs (see `gputui record`)",
    )
    parser.add_argument(
        "--models",
        type=path_arg,
        dest="dashboard_models",
        metavar="FILE",
        help="the models file the fit line and the Fit screen judge (default: ./gputui.toml, "
        "then the user config's models.toml)",
    )


# What `fast_args` reads itself. Each option exactly as spelled here (argparse would also
# take an abbreviation: left to it), a value as the next word or after `=`.
FAST_FLAGS = {"--demo": "demo", "--readonly": "readonly"}
FAST_VALUES = {"--source": "source", "--interval": "interval"}
# argparse's namespace for `gputui` alone (add_arguments' defaults, no subcommand), also
# the base of a subcommand's (commands/snapshot.py); tests/core/test_cli_fast_path.py
# checks it and every accepted line against argparse.
FAST_DEFAULTS: dict[str, object] = {
    "source": "auto",
    "demo": False,
    "scenario": None,
    "interval": 1.0,
    "readonly": False,
    "only": None,
    "respect_cuda_visible_devices": False,
    "no_config": False,
    "dashboard_models": None,
    "recording": None,
    "prometheus": None,
    "match": None,
    "record": None,
    "command": None,
}


def _fast_value(option: str, text: str) -> object:
    """`text` as argparse's `choices` / `type=float` would take it; ValueError where it
    would not, or where a word starting with "-" makes argparse's reading subtle."""
    if text.startswith("-"):
        raise ValueError(text)  # an option, or a negative number: argparse decides
    if option == "--source":
        if text not in SOURCES:
            raise ValueError(text)
        return text
    return float(text)  # what argparse calls; its ValueError is argparse's error too


def fast_args(words: list[str]) -> SimpleNamespace | None:
    """The parsed dashboard command line when it uses only FAST_FLAGS and FAST_VALUES, else None.

    argparse with every subcommand's parser (its import with gettext, the fit and catalog
    options' modules) stays resident for the dashboard's lifetime: ~0.5 MiB of the
    dashboard's memory (benchmarks/rss.py) to read `--source nvml --interval 1`. This
    reads exactly those forms, with argparse's result; anything else (another option,
    an abbreviation, a value argparse would refuse, --help, a subcommand) returns None
    and goes to argparse, which parses it or reports the error as always.
    """
    values = dict(FAST_DEFAULTS, run=run)
    at = 0
    while at < len(words):
        word = words[at]
        option, eq, text = word.partition("=")
        try:
            if not eq and word in FAST_FLAGS:
                values[FAST_FLAGS[word]] = True
            elif option in FAST_VALUES:
                if not eq:
                    at += 1
                    if at == len(words):
                        return None  # the value is missing: argparse's error
                    text = words[at]
                values[FAST_VALUES[option]] = _fast_value(option, text)
            else:
                return None
        except ValueError:
            return None
        at += 1
    from types import SimpleNamespace

    return SimpleNamespace(**values)


def run(args: argparse.Namespace | SimpleNamespace) -> int:
    from gputui.core.errors import UserError
    from gputui.sources.base import SourceKind

    interval = float(args.interval)
    if not 0.1 <= interval <= 3600:
        raise UserError(f"--interval: {interval:g} s is out of range (0.1 to 3600)")
    kind: SourceKind = "demo" if args.demo else args.source
    entry = registry.lookup(kind)
    for dest in entry.required:
        if not getattr(args, dest, None):
            flag = next(o for o in entry.options if o.dest == dest)
            raise UserError(f"--source {kind}: needs {flag.flag} {flag.metavar}")
    # the cluster view: tui/cluster_app.py
    fleet = entry.scope == "fleet"
    if (
        fleet
        or getattr(args, "prometheus", None) is not None
        or getattr(args, "match", None) is not None
    ):
        from gputui.tui.cluster_app import run_cluster

        return run_cluster(args, interval)
    from gputui.core.inputfile import TOML_CAP, check_option_file, read_option_text

    if getattr(args, "scenario", None) is not None:
        args.scenario = checked_scenario(args.scenario)
        check_option_file(args.scenario, "--scenario")
    # The sources' options, as the registry declares them: a file named must exist.
    from gputui.core import pathprobe  # here: `snapshot` imports this module, not pathlib

    given = {o.dest: getattr(args, o.dest, None) for o in registry.options()}
    for option in registry.options():
        path = given[option.dest]
        if option.kind == "path" and path is not None and not pathprobe.is_file(path):
            raise UserError(f"{option.flag}: {path}: no such file")
    source, fallback_reason = open_given_source(args, kind=kind)

    record_to = getattr(args, "record", None)
    if record_to is not None:
        from gputui.recording.store import Recorder
        from gputui.sources.recorded import Recorded

        try:
            source = Recorded(source, Recorder(record_to))
        except UserError:
            source.close()
            raise
    models = getattr(args, "dashboard_models", None)
    if models is not None:
        try:  # read once here so a file that is no models file at all is refused at start
            read_option_text(models, "--models", TOML_CAP)
        except UserError:
            source.close()
            raise
    only = getattr(args, "only", None)
    if only is not None or getattr(args, "respect_cuda_visible_devices", False):
        from gputui.tui.views.gpu_choice import choose_gpus

        try:
            source = choose_gpus(source, only, bool(args.respect_cuda_visible_devices))
        except UserError:
            source.close()
            raise

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        # Textual reads keys from stdin: at end-of-file its input thread would spin.
        source.close()
        raise UserError(
            "the dashboard needs a terminal on stdin and stdout; "
            "for a one-shot listing use `gputui snapshot`"
        )

    # The first poll runs while Textual and the dashboard are imported (tui/first_poll.py).
    from gputui.tui.first_poll import FirstPoll

    first_poll = FirstPoll(source)
    from gputui.tui.run import run_dashboard
    from gputui.tui.settings import load, settings_path

    saved_at = None if getattr(args, "no_config", False) else settings_path()
    settings = None
    alert_rules = None
    if saved_at is not None:
        settings, warning, whole = load(saved_at)
        if whole:  # its [alerts] rules: a bad one is one line and exit 2 (docs/alerts.md)
            alert_rules = _alert_rules(saved_at, first_poll, source)
        if warning is not None:
            print(f"gputui: warning: {warning}", file=sys.stderr)
        if not whole:
            saved_at = None  # a file gputui could not read whole is never written
        if settings.interval is not None and interval == FAST_DEFAULTS["interval"]:
            interval = settings.interval  # a saved interval, unless --interval said another

    if record_to is not None:
        _record_alerts(source, alert_rules)
    return run_dashboard(
        source,
        fallback_reason=fallback_reason,
        interval=interval,
        readonly=bool(args.readonly),
        models_path=models,
        settings=settings,
        settings_path=saved_at,
        first_poll=first_poll,
        alert_rules=alert_rules,
    )


def _record_alerts(source: Source, rules: tuple[Rule, ...] | None) -> None:
    """`--record`: the recording keeps every alert change the rules give (its own engine:
    a rule muted on the alerts screen is muted in the view, not in the record)."""
    from gputui.alerts.engine import AlertEngine
    from gputui.alerts.rules import default_rules
    from gputui.sources.recorded import Recorded

    if isinstance(source, Recorded):
        source.alerts = AlertEngine(rules if rules is not None else default_rules()).update


def _alert_rules(path: Path, first_poll: FirstPoll, source: Source) -> tuple[Rule, ...]:
    """The settings file's alert rules; on a bad one the source is closed before the exit."""
    from gputui.alerts.rules import load_rules
    from gputui.core.errors import UserError

    try:
        return load_rules(path, required=False)
    except UserError:
        first_poll.wait()
        source.close()
        raise
