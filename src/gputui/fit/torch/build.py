"""A TorchSpec turned into a TracedModel: torch checked for, the user's callables resolved.

Nothing is traced here; the model traces itself when the engine first asks for a
precision (model.py). Without torch this is the one place that says how to get it.
"""

from __future__ import annotations

import importlib.util

from gputui.core.errors import UserError
from gputui.fit.torch.load import resolve
from gputui.fit.torch.model import TracedModel
from gputui.fit.torch.spec import INSTALL_HINT, TorchSpec
from gputui.fit.torch.trace import UserCode


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None


def traced_model(spec: TorchSpec, backend: str = "cuda") -> TracedModel:
    """The model `spec` names, ready to trace on `backend` ("cuda" or "cpu")."""
    if not torch_available():
        raise UserError(INSTALL_HINT)
    if spec.inputs is None and not spec.input_shapes:
        raise UserError(
            f"{spec.name}: say what one batch is: --inputs FILE.py:CALLABLE or "
            "--input-shape 3,224,224[:dtype] (input_shapes / inputs in a models file)"
        )
    if spec.inputs is not None and spec.input_shapes:
        raise UserError(f"{spec.name}: --inputs and --input-shape: give one of them")
    code = UserCode(
        resolve(spec.factory, "--torch", spec.base_dir),
        resolve(spec.inputs, "--inputs", spec.base_dir) if spec.inputs else None,
        resolve(spec.loss, "--loss", spec.base_dir) if spec.loss else None,
    )
    return TracedModel(spec, code, backend=backend)
