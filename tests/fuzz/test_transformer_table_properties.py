"""Hostile values for every key of a models-TOML `kind = "transformer"` table.

A valid train or generate table gets one to three keys replaced by a value of any TOML type
(huge and negative integers, non-finite floats, dates, long or control-laden strings, nested
lists and tables). The file is either accepted, or refused with one short line naming the
file and one of the replaced keys: never a traceback.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import properties
from family_transformer_table import toml_string, toml_value
from hypothesis import given
from hypothesis import strategies as st

from gputui.core.errors import UserError
from gputui.fit.importers.modelsfile import load_models
from gputui.fit.importers.transformer_table import KEYS

SETTINGS = properties.bounded(50)
CONFIG = (
    '{ model_type = "llama", hidden_size = 256, num_hidden_layers = 2, num_attention_heads = 4, '
    "num_key_value_heads = 2, intermediate_size = 512, vocab_size = 1000 }"
)
BASE = {"name": '"m"', "kind": '"transformer"', "config": CONFIG}

_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=30) | st.sampled_from(
    ["q_proj", "all-linear", "bf16", "nf4", "fp8", "train", "lora", "x" * 5000, "\x1b[31m"]
)
_scalars = (
    st.integers(min_value=-(10**400), max_value=10**400)
    | st.sampled_from([0, -1, 1, 2**63, 10**400, 4096, 1 << 40])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.booleans()
    | _text
    | st.dates(min_value=dt.date(1, 1, 1))
)
HOSTILE = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(_scalars, min_size=60, max_size=120)
        | st.dictionaries(st.sampled_from(["a", "model_type", "hidden_size"]), inner, max_size=3)
    ),
    max_leaves=12,
)


@SETTINGS
@given(
    mode=st.sampled_from(["train", "generate"]),
    planted=st.dictionaries(st.sampled_from(sorted(KEYS)), HOSTILE, min_size=1, max_size=3),
)
def test_every_key_takes_any_value_without_a_traceback(
    tmp_path_factory: Any, mode: str, planted: dict[str, Any]
) -> None:
    table = {**BASE, "mode": toml_string(mode)}
    table.update({key: toml_value(value) for key, value in planted.items()})
    path: Path = tmp_path_factory.mktemp("table") / "models.toml"
    path.write_text("[[model]]\n" + "".join(f"{k} = {v}\n" for k, v in table.items()))
    try:
        load_models(path)
    except UserError as exc:
        message = str(exc)
        assert "\n" not in message and len(message) < 1600, message
        assert "models.toml" in message, message
        named = [*planted, "mode", "hf_config"]  # the replaced keys, or a rule they broke
        assert any(f"{key}{sep}" in message for key in named for sep in (":", ".", " =")), message
