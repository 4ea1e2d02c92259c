"""Alert rules from hostile config tables: every table is rules or one RuleError line, never
another exception, and a rule that loads holds only values in its documented ranges."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from gputui.alerts.rules import COMMON_KEYS, DAY_S, RULES, RuleError, rules_from_table

KEYS = st.sampled_from([*COMMON_KEYS, "threshold_pct", "margin_c", "slowdown_c", "min_used_gib",
                        "pids", "commands", "x", ""])  # fmt: skip
VALUES = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=8),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=8,
)  # fmt: skip
TABLES = st.one_of(
    VALUES,
    st.dictionaries(
        st.one_of(st.sampled_from(list(RULES)), st.text(max_size=6)),
        st.one_of(VALUES, st.dictionaries(KEYS, VALUES, max_size=4)),
        max_size=4,
    ),
)


@settings(max_examples=400, deadline=None)
@given(table=TABLES)
def test_any_table_is_rules_or_one_line(table: object) -> None:
    try:
        rules = rules_from_table(table, "rules.toml")
    except RuleError as exc:
        text = str(exc)
        assert text.startswith("rules.toml: alerts") and "\n" not in text
        return
    assert [r.name for r in rules] == list(RULES)
    for rule in rules:
        assert 0 <= rule.for_s <= DAY_S and 0 <= rule.clear_s <= DAY_S
        assert rule.limit is None or math.isfinite(rule.limit)
