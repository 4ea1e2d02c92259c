"""keras.json (the backend Keras is configured with) with hostile contents: a runtime,
or one line naming the file (UserError), never a traceback or a guess."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from properties import bounded

from gputui.core.errors import UserError
from gputui.fit.graph.runtime import RUNTIMES
from gputui.fit.importers.keras_config import configured_runtime

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
_CONFIG = st.one_of(
    st.binary(max_size=200),
    _JSON.map(lambda v: json.dumps(v).encode()),
    st.dictionaries(
        st.sampled_from(["backend", "floatx", "epsilon", "image_data_format"]),
        st.sampled_from(["torch", "jax", "tensorflow", "numpy", "", "TORCH"]) | _JSON,
    ).map(lambda d: json.dumps(d).encode()),
)


@bounded(150)
@given(data=_CONFIG, env_backend=st.none() | st.text(max_size=12))
def test_any_keras_json_gives_a_runtime_or_one_line(data: bytes, env_backend: str | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "keras.json").write_bytes(data)
        env = {"KERAS_HOME": tmp}
        if env_backend is not None:
            env["KERAS_BACKEND"] = env_backend
        try:
            runtime, why = configured_runtime(env)
        except UserError as exc:
            text = str(exc)
            assert "\n" not in text
            assert "keras.json" in text or "KERAS_BACKEND" in text
            return
        assert runtime in RUNTIMES
        assert why and "\n" not in why
