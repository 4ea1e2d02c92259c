"""The registry is what the command line offers: --source's choices and options come from it,
every entry opens the Source it names, and only the source asked for is imported."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gputui.cli import build_parser, main
from gputui.sources import registry
from gputui.sources.base import Source, open_source
from gputui.sources.errors import SourceUnavailable

DEMO = Path(__file__).resolve().parents[2] / "src/gputui/sources/simulated/scenarios/demo.toml"


def _action(parser: argparse.ArgumentParser, dest: str) -> argparse.Action:
    return next(a for a in parser._actions if a.dest == dest)


def _subparser(name: str) -> argparse.ArgumentParser:
    sub = _action(build_parser(name), "command")
    assert isinstance(sub, argparse._SubParsersAction)
    parser: argparse.ArgumentParser = sub.choices[name]
    return parser


def test_the_dashboards_source_choices_are_the_registrys_names() -> None:
    choices = _action(build_parser(), "source").choices
    assert list(choices or ()) == list(registry.choices())
    assert {"auto", "nvml", "simulated", "demo", "prometheus"} <= set(registry.choices())


def test_the_exporters_source_choices_are_the_registrys_one_host_names() -> None:
    choices = _action(_subparser("exporter"), "source").choices
    assert list(choices or ()) == list(registry.choices("host"))
    assert "prometheus" not in (choices or ())  # a fleet is not one host's /metrics


def test_every_option_a_source_declares_is_on_the_command_line() -> None:
    flags = {f for a in build_parser()._actions for f in a.option_strings}
    assert [o.flag for o in registry.options() if o.flag not in flags] == []
    exporter = {f for a in _subparser("exporter")._actions for f in a.option_strings}
    assert [o.flag for o in registry.options("host") if o.flag not in exporter] == []


@pytest.mark.parametrize("name", registry.sources())
def test_each_entry_names_a_source_class_of_that_name(name: str) -> None:
    module, _, attr = registry.lookup(name).opener.partition(":")
    __import__(module)
    cls = getattr(sys.modules[module], attr)
    assert issubclass(cls, Source) and cls.name == name
    assert cls.from_options.__func__ is not Source.from_options.__func__  # it opens by name


def test_a_policy_entry_tries_only_registered_sources() -> None:
    for entry in registry.entries():
        assert set(entry.tries) <= set(registry.sources()), entry


def test_a_source_without_poll_cannot_be_built() -> None:
    class Forgetful(Source):
        name = "forgetful"

        def close(self) -> None:
            pass

    with pytest.raises(TypeError, match="poll"):
        Forgetful()  # type: ignore[abstract]


def test_open_source_opens_by_name_and_alias() -> None:
    for name in ("simulated", "demo"):
        source, reason = open_source(name, DEMO)
        assert source.name == "simulated" and reason is None
        assert source.poll().source == "simulated"
        source.close()
    with pytest.raises(KeyError, match="choices: auto, nvml"):
        open_source("nvidia")  # type: ignore[arg-type]


def test_auto_falls_back_past_an_unavailable_source_with_its_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gputui.sources.nvml.source import NvmlSource

    def unavailable(cls: type, options: object) -> Source:
        raise SourceUnavailable("no NVIDIA driver here")

    monkeypatch.setattr(NvmlSource, "from_options", classmethod(unavailable))
    source, reason = open_source("auto", DEMO)
    assert (source.name, reason) == ("simulated", "no NVIDIA driver here")
    with pytest.raises(SourceUnavailable):
        open_source("nvml")


def _modules_after(code: str) -> list[str]:
    run = subprocess.run(
        [sys.executable, "-c", code + "\nimport json, sys; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return list(json.loads(run.stdout.strip().splitlines()[-1]))


def test_the_registry_imports_no_source() -> None:
    loaded = _modules_after("import gputui.sources.registry, gputui.commands.tui")
    assert [m for m in loaded if m.startswith(("gputui.sources.", "pynvml"))] == [
        "gputui.sources.registry"
    ]


def test_opening_one_source_imports_no_other() -> None:
    loaded = _modules_after(
        f"from gputui.sources.base import open_source\nopen_source('demo', {str(DEMO)!r})"
    )
    assert "gputui.sources.simulated.source" in loaded
    assert [m for m in loaded if m.startswith(("pynvml", "gputui.sources.nvml"))] == []
    assert [m for m in loaded if m.startswith("gputui.sources.prometheus")] == []


def test_source_prometheus_needs_its_url(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--source", "prometheus"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "gputui: --source prometheus: needs --prometheus URL"


def test_source_prometheus_with_its_url_opens_the_cluster_source(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Port 9 (discard) on loopback: nothing listens, so the cluster source's own error."""
    code = main(["--source", "prometheus", "--prometheus", "http://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == 1 and "--source" not in err and err.count("\n") == 1, err


def test_a_host_source_with_prometheus_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--source", "nvml", "--prometheus", "http://127.0.0.1:9"]) == 2
    assert "--source: not with --prometheus" in capsys.readouterr().err


def test_a_file_a_source_option_names_must_exist(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--source", "simulated", "--scenario", "missing.toml"]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith("gputui: --scenario: missing.toml: scenario file not found")
        and "\n" not in err
    )


def test_the_dashboard_opens_its_source_with_the_options_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """--source simulated --scenario FILE reaches SimulatedSource through the registry
    (run_dashboard stubbed: no UI here)."""
    import io

    import gputui.tui.run as run

    scenario = tmp_path / "elsewhere.toml"
    scenario.write_text(DEMO.read_text().replace('hostname = "', 'hostname = "elsewhere-', 1))
    seen: list[str] = []

    def stub(source: Source, **_kw: object) -> int:
        host = source.poll().host
        seen.append(f"{source.name} {host.hostname if host else None}")
        return 0

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(run, "run_dashboard", stub)
    monkeypatch.setattr(sys, "stdin", Terminal())
    monkeypatch.setattr(sys, "stdout", Terminal())
    argv = ["--source", "simulated", "--scenario", str(scenario), "--no-config"]
    assert main(argv) == 0
    assert len(seen) == 1 and seen[0].startswith("simulated elsewhere-"), seen
