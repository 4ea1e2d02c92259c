"""Alert rules from the config file: defaults, settings applied, and a bad rule is one line
naming the file and the key (exit 2), never a traceback nor a rule silently dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputui.alerts.rules import RULES, RuleError, default_rules, load_rules
from gputui.alerts.xid import ACTIONS, UNKNOWN, describe_xid, xid_catalog
from gputui.core.errors import UserError


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "settings.toml"
    path.write_text(text)
    return path


def test_a_missing_settings_file_gives_the_defaults_and_a_given_one_must_exist(
    tmp_path: Path,
) -> None:
    assert load_rules(tmp_path / "nope.toml", required=False) == default_rules()
    with pytest.raises(UserError, match="nope.toml: config file not found"):
        load_rules(tmp_path / "nope.toml", required=True)


def test_settings_apply_to_their_rule_and_the_others_keep_defaults(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "interval = 2\n[alerts.memory_high]\nthreshold_pct = 90\nfor_s = 5\n"
        '[alerts.xid]\nmuted = true\n[alerts.process_ended]\ncommands = ["train.py"]\n',
    )
    rules = {r.name: r for r in load_rules(path, required=True)}
    assert list(rules) == list(RULES)
    assert (rules["memory_high"].limit, rules["memory_high"].for_s) == (90.0, 5.0)
    assert rules["memory_high"].clear_s == RULES["memory_high"].default.clear_s
    assert rules["xid"].muted and not rules["gpu_lost"].muted
    assert rules["process_ended"].commands == ("train.py",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[alerts.memory_high]\nthreshold_pct = 120\n",
         "alerts.memory_high.threshold_pct: 120 is out of range (1 to 100)"),
        ("[alerts.memory_high]\nthreshold = 90\n",
         "alerts.memory_high.threshold: unknown setting (settings: muted, for_s"),
        ("[alerts.memory_hi]\nfor_s = 3\n", "alerts.memory_hi: unknown rule (rules: memory_high"),
        ("[alerts.xid]\nmuted = 1\n", "alerts.xid.muted: must be true or false"),
        ("[alerts.gpu_lost]\nclear_s = -1\n", "alerts.gpu_lost.clear_s: -1 is out of range"),
        ("[alerts.throttling]\nseverity = 'loud'\n", "alerts.throttling.severity: must be one of"),
        ("[alerts.process_ended]\npids = [0]\n", "alerts.process_ended.pids: must be a list of"),
        ("alerts = 3\n", "alerts: must be a table of rules"),
        ("[alerts]\nxid = 3\n", "alerts.xid: must be a table of settings"),
    ],
)  # fmt: skip
def test_a_bad_rule_is_one_line_naming_the_file_and_key(
    tmp_path: Path, text: str, message: str
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(RuleError) as caught:
        load_rules(path, required=True)
    line = str(caught.value)
    assert line.startswith(str(path)) and message in line and "\n" not in line
    assert caught.value.exit_code == 2


def test_the_shipped_xid_catalog_reads_and_says_where_each_row_comes_from() -> None:
    catalog = xid_catalog()
    assert {13, 31, 43, 48, 63, 79, 94, 95} <= set(catalog)
    assert all(info.action in ACTIONS for info in catalog.values())
    assert describe_xid(13)[1] == "restart_app"
    assert describe_xid(13)[2] == "restart the application"  # read in the catalog: no mark
    assert describe_xid(95)[2].endswith("(unverified)")  # not checked: it says so
    assert describe_xid(4242) == (UNKNOWN, None, UNKNOWN)


def test_the_dashboard_settings_pass_the_alerts_table_to_the_rules() -> None:
    from gputui.tui.settings import parse

    settings, problems = parse({"interval": 2, "alerts": {"xid": {"muted": True}}})
    assert problems == [] and settings.interval == 2.0
