"""What one optimizer step moves and launches, per implementation: the roofline's inputs
for the update every front-end adds after its backward pass.

Why a module of its own: the layer graph (fit/graph/step_ops.py `optimizer_ops`) and the
transformer (fit/transformer/step_ops.py `train_timing`) both time the same PyTorch
optimizers, so the per-parameter traffic is counted once, here.
"""

from __future__ import annotations

import math

# PyTorch's multi_tensor_apply (foreach optimizers): at most 48 tensors of a
# 3-list op and 320 blocks of 65,536 elements per launch.
FOREACH_TENSORS_PER_LAUNCH = 48
FOREACH_ELEMENTS_PER_LAUNCH = 320 * 65536
# Tensor reads+writes per parameter of one PyTorch foreach optimizer step, counted
# op by op (each foreach op reads its operands and writes its result once):
# sgd add(w,g); momentum mul/add(m,g) + add(w,m); rmsprop mul/addcmul(v,g,g) +
# sqrt/add(eps) + addcdiv(w,g,v); adam lerp(m,g) + mul/addcmul(v,g,g) + sqrt +
# div + add(eps) + addcdiv(w,m,denom); adamw adds the decoupled mul(w).
OPTIMIZER_TRAFFIC: dict[str, tuple[int, int]] = {  # (tensor accesses, foreach ops)
    "sgd": (3, 1),
    "momentum": (6, 2),
    "rmsprop": (12, 4),
    "adam": (18, 7),
    "adamw": (20, 8),
}
# The same optimizers as kernels of other implementations (see `Software.optimizer`):
# - "fused" (apex FusedAdam/FusedSGD, torch's fused=True): one multi-tensor kernel reads
#   the weight, gradient and state once and writes weight and state once (sgd: w, g ->
#   w; momentum: w, g, m -> w, m; adam/adamw: w, g, m, v -> w, m, v; rmsprop w, g, v).
# - "loop" (a Python loop over the tensors: PyTorch before 2.0 and `foreach=False`): the
#   foreach ops' traffic, but every op launches once per tensor, one layer after the
#   other (so the host's issue rate matters).
# - "bertadam" (Adam as NVIDIA's BERT scripts write it, DLE LanguageModeling/BERT/
#   optimization.py BertAdam.step): a loop over the tensors that first clips each
#   tensor's gradient on its own (clip_grad_norm_: norm, stack, norm, clamp, scale: 6
#   kernels, 3 accesses), then mul_/add_ m, mul_/addcmul_ v, sqrt, + eps, divide,
#   weight decay (x, +=), x lr, negate, add_ to the weight: 12 kernels, 30 accesses.
FUSED_TRAFFIC: dict[str, int] = {"sgd": 3, "momentum": 5, "rmsprop": 5, "adam": 7, "adamw": 7}
BERTADAM_TRAFFIC = (33, 18)  # (tensor accesses per element, kernels per tensor)


def foreach_launches(params: int, tensors: int) -> int:
    """Launches of one foreach op over `params` elements in `tensors` tensors (at least one)."""
    return max(
        math.ceil(tensors / FOREACH_TENSORS_PER_LAUNCH),
        math.ceil(params / FOREACH_ELEMENTS_PER_LAUNCH),
        1,
    )
