"""Will this model fit on this GPU: a pure library (no UI, no NVML, no Textual).

The public API, documented in docs/api.md: the names in `__all__`. The CLI, the TUI
and the exporter import the fit engine only through them (an import-linter contract
in pyproject.toml keeps them out of fit.core, fit.graph, fit.transformer and
fit.importers). The names load on first use, so `import gputui.fit` stays cheap for
the dashboard's start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gputui.fit.core.mig import advice_lines
    from gputui.fit.core.power import tflops_per_watt
    from gputui.fit.core.precision import recommend
    from gputui.fit.core.precision_names import PRECISIONS
    from gputui.fit.core.ranking import over_budget
    from gputui.fit.core.roofline import Profile
    from gputui.fit.core.software import MEMORY_FORMAT_CHOICES, OPTIMIZER_IMPLS, memory_format
    from gputui.fit.core.speed import Speed
    from gputui.fit.core.target import Target, card_target
    from gputui.fit.core.verdict import verdict
    from gputui.fit.entry import (
        FitAnswer,
        FitRequest,
        ModelCheck,
        Ranked,
        TransformerCheck,
        check,
    )
    from gputui.fit.graph.estimate import memory_model
    from gputui.fit.graph.runtime import RUNTIMES
    from gputui.fit.graph.spec import ModelSpec
    from gputui.fit.importers.detect import FILE_KINDS
    from gputui.fit.importers.hf import load_cached as load_hf_cached
    from gputui.fit.importers.modelsfile import AnyModel, shown
    from gputui.fit.importers.registry import TRANSFORMER_KINDS, detect_kind, load_any
    from gputui.fit.targets import Unavailable, targets_from_snapshot
    from gputui.fit.torch.build import traced_model
    from gputui.fit.torch.spec import TorchSpec, parse_input_shape
    from gputui.fit.transformer.ask import WorkloadAsk, auto_parallel, build_workload
    from gputui.fit.transformer.estimate import memory as transformer_memory
    from gputui.fit.transformer.model import TransformerModel
    from gputui.fit.transformer.parallel_choice import asked as asked_parallel
    from gputui.fit.transformer.parallel_choice import choose as choose_parallel
    from gputui.fit.transformer.parallel_choice import hint_lines
    from gputui.fit.transformer.report import model_line as transformer_model_line
    from gputui.fit.transformer.report import workload_line as transformer_workload_line
    from gputui.fit.transformer.spec import TransformerSpec
    from gputui.fit.transformer.workload import Workload

# public name -> (module, name in it)
_PUBLIC: dict[str, tuple[str, str]] = {
    "FILE_KINDS": ("gputui.fit.importers.detect", "FILE_KINDS"),
    "Unavailable": ("gputui.fit.targets", "Unavailable"),
    "card_target": ("gputui.fit.core.target", "card_target"),
    "targets_from_snapshot": ("gputui.fit.targets", "targets_from_snapshot"),
    "AnyModel": ("gputui.fit.importers.modelsfile", "AnyModel"),
    "shown": ("gputui.fit.importers.modelsfile", "shown"),
    "transformer_model_line": ("gputui.fit.transformer.report", "model_line"),
    "transformer_workload_line": ("gputui.fit.transformer.report", "workload_line"),
    "FitAnswer": ("gputui.fit.entry", "FitAnswer"),
    "FitRequest": ("gputui.fit.entry", "FitRequest"),
    "MEMORY_FORMAT_CHOICES": ("gputui.fit.core.software", "MEMORY_FORMAT_CHOICES"),
    "ModelCheck": ("gputui.fit.entry", "ModelCheck"),
    "ModelSpec": ("gputui.fit.graph.spec", "ModelSpec"),
    "RUNTIMES": ("gputui.fit.graph.runtime", "RUNTIMES"),
    "OPTIMIZER_IMPLS": ("gputui.fit.core.software", "OPTIMIZER_IMPLS"),
    "PRECISIONS": ("gputui.fit.core.precision_names", "PRECISIONS"),
    "Profile": ("gputui.fit.core.roofline", "Profile"),
    "Ranked": ("gputui.fit.entry", "Ranked"),
    "Speed": ("gputui.fit.core.speed", "Speed"),
    "TRANSFORMER_KINDS": ("gputui.fit.importers.registry", "TRANSFORMER_KINDS"),
    "Target": ("gputui.fit.core.target", "Target"),
    "TorchSpec": ("gputui.fit.torch.spec", "TorchSpec"),
    "TransformerCheck": ("gputui.fit.entry", "TransformerCheck"),
    "TransformerModel": ("gputui.fit.transformer.model", "TransformerModel"),
    "TransformerSpec": ("gputui.fit.importers.transformer_table", "TransformerSpec"),
    "Workload": ("gputui.fit.transformer.workload", "Workload"),
    "WorkloadAsk": ("gputui.fit.transformer.ask", "WorkloadAsk"),
    "advice_lines": ("gputui.fit.core.mig", "advice_lines"),
    "asked_parallel": ("gputui.fit.transformer.parallel_choice", "asked"),
    "auto_parallel": ("gputui.fit.transformer.ask", "auto_parallel"),
    "build_workload": ("gputui.fit.transformer.ask", "build_workload"),
    "check": ("gputui.fit.entry", "check"),
    "choose_parallel": ("gputui.fit.transformer.parallel_choice", "choose"),
    "detect_kind": ("gputui.fit.importers.registry", "detect_kind"),
    "hint_lines": ("gputui.fit.transformer.parallel_choice", "hint_lines"),
    "load_any": ("gputui.fit.importers.registry", "load_any"),
    "load_hf_cached": ("gputui.fit.importers.hf", "load_cached"),
    "memory_format": ("gputui.fit.core.software", "memory_format"),
    "memory_model": ("gputui.fit.graph.estimate", "memory_model"),
    "over_budget": ("gputui.fit.core.ranking", "over_budget"),
    "recommend": ("gputui.fit.core.precision", "recommend"),
    "parse_input_shape": ("gputui.fit.torch.spec", "parse_input_shape"),
    "tflops_per_watt": ("gputui.fit.core.power", "tflops_per_watt"),
    "traced_model": ("gputui.fit.torch.build", "traced_model"),
    "transformer_memory": ("gputui.fit.transformer.estimate", "memory"),
    "verdict": ("gputui.fit.core.verdict", "verdict"),
}

__all__ = [
    "AnyModel",
    "FILE_KINDS",
    "FitAnswer",
    "FitRequest",
    "MEMORY_FORMAT_CHOICES",
    "ModelCheck",
    "ModelSpec",
    "OPTIMIZER_IMPLS",
    "PRECISIONS",
    "Profile",
    "RUNTIMES",
    "Ranked",
    "Speed",
    "TRANSFORMER_KINDS",
    "Target",
    "TorchSpec",
    "TransformerCheck",
    "TransformerModel",
    "TransformerSpec",
    "Unavailable",
    "Workload",
    "WorkloadAsk",
    "advice_lines",
    "asked_parallel",
    "auto_parallel",
    "build_workload",
    "card_target",
    "check",
    "choose_parallel",
    "detect_kind",
    "hint_lines",
    "load_any",
    "load_hf_cached",
    "memory_format",
    "memory_model",
    "over_budget",
    "parse_input_shape",
    "recommend",
    "shown",
    "targets_from_snapshot",
    "tflops_per_watt",
    "traced_model",
    "transformer_memory",
    "transformer_model_line",
    "transformer_workload_line",
    "verdict",
]


def __getattr__(name: str) -> Any:
    """A public name, imported on first use (PEP 562)."""
    where = _PUBLIC.get(name)
    if where is None:
        raise AttributeError(f"module 'gputui.fit' has no attribute {name!r}")
    value = getattr(importlib.import_module(where[0]), where[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
