"""How the framework runs a model where that changes the kernels, not the maths.

The user says it per model in the models file (`memory_format`, `optimizer_impl`) or on
the command line (`--memory-format`, `--optimizer-impl`); the roofline (fit.core.roofline)
prices the kernels each choice runs. Pure data and the names users write: no imports
from the estimators, so the models file can carry a `Software` without a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

MemoryFormat = Literal["channels_last", "channels_first"]
OptimizerImpl = Literal["foreach", "fused", "loop", "bertadam"]

# What users may write. PyTorch calls NCHW `torch.contiguous_format`, Keras calls the
# layouts `channels_first` / `channels_last`: both spellings are accepted and shown as
# the Keras pair (the models file is written in Keras' words).
MEMORY_FORMATS: tuple[MemoryFormat, ...] = ("channels_first", "channels_last")
MEMORY_FORMAT_ALIASES: dict[str, MemoryFormat] = {"contiguous_format": "channels_first"}
MEMORY_FORMAT_CHOICES = (*MEMORY_FORMATS, *MEMORY_FORMAT_ALIASES)
# PyTorch's optimizer arguments: foreach=True (the default on CUDA), fused=True (also
# apex's FusedAdam/FusedSGD), foreach=False (a Python loop over the tensors). BertAdam is
# a benchmark's documented choice, not a user-facing one.
OPTIMIZER_IMPLS: tuple[OptimizerImpl, ...] = ("foreach", "fused", "loop")


@dataclass(frozen=True, slots=True)
class Software:
    """How the framework runs the model where that changes the kernels, not the maths.

    The defaults (`DEFAULT_SOFTWARE`) are PyTorch 2's own for a user's run: NCHW tensors
    (`torch.channels_last` is opt-in) and foreach optimizers. A models file or the CLI
    may say otherwise per model; a benchmark whose source documents another choice
    passes it (benchmarks/speed_vs_published.py); nothing here is fitted.

    - `memory_format` "channels_first" (PyTorch's default NCHW): cuDNN's tensor-core
      convolutions work in NHWC, so for every tensor-core convolution call it transposes
      the activation input to NHWC and the output back, a read and a write of each
      (NVIDIA, "Convolutional Layers User's Guide", Tensor Layouts in Memory: "NCHW
      layouts can still be operated on by Tensor Cores, but include some overhead due to
      automatic transpose operations"; MosaicML Composer's Channels Last method card:
      ~30 % on ResNet-50 on V100 and A100). CUDA-core convolutions run NCHW natively.
    - `optimizer` "foreach" / "fused" / "loop" / "bertadam" (an Adam only): see
      fit.core.optimizer_traffic's OPTIMIZER_TRAFFIC, FUSED_TRAFFIC and BERTADAM_TRAFFIC.
    - `score_scale_mask`: an unfused (eager) attention divides the score maps by
      sqrt(head size) and adds the additive mask as two kernels of their own, each a read
      and a write of the maps, and the division's backward a third (NVIDIA's BERT
      modeling.py, `attention_scores / math.sqrt(...)` then `+ attention_mask`, as in
      Hugging Face's eager BertSelfAttention). Keras scales the query instead, which is
      what a models file's MultiHeadAttention is, so users never set it.
    """

    memory_format: MemoryFormat = "channels_first"
    optimizer: OptimizerImpl = "foreach"
    score_scale_mask: bool = False


DEFAULT_SOFTWARE = Software()


def memory_format(value: object) -> MemoryFormat:
    """A user's layout name as the roofline's; ValueError saying what is accepted."""
    if isinstance(value, str) and value in MEMORY_FORMATS:
        return value
    if isinstance(value, str) and value in MEMORY_FORMAT_ALIASES:
        return MEMORY_FORMAT_ALIASES[value]
    raise ValueError(
        'must be "channels_first" (NCHW, PyTorch\'s default; also "contiguous_format") '
        f'or "channels_last" (NHWC), got {value!r}'
    )


def optimizer_impl(value: object) -> OptimizerImpl:
    """A user's optimizer implementation name; ValueError saying what is accepted."""
    if isinstance(value, str) and value in OPTIMIZER_IMPLS:
        return value
    raise ValueError(
        'must be "foreach" (PyTorch\'s default), "fused" (fused=True, apex FusedAdam) '
        f'or "loop" (foreach=False), got {value!r}'
    )


_LAYOUT_TEXT = {"channels_first": "NCHW (channels_first)", "channels_last": "NHWC (channels_last)"}


def describe(sw: Software, *, training: bool, convolutions: bool = True) -> str:
    """What the speed assumed, as one phrase: "NCHW (channels_first), foreach optimizer".

    The optimizer is named only for a training step (inference runs none); a model
    without convolutions says the layout changes nothing for it.
    """
    layout = _LAYOUT_TEXT[sw.memory_format]
    if not convolutions:
        layout += " (no convolutions: no effect)"
    parts = [layout]
    if training:
        parts.append(f"{sw.optimizer} optimizer")
    return ", ".join(parts)


def software_dict(sw: Software, *, training: bool) -> dict[str, str | None]:
    """The JSON `software` object: `memory_format`, `optimizer_impl` (null for inference)."""
    return {
        "memory_format": sw.memory_format,
        "optimizer_impl": sw.optimizer if training else None,
    }
