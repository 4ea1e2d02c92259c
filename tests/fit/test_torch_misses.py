"""What a real kernel holds beyond its outputs, which fake tensors cannot see (skipped
without torch)."""

from __future__ import annotations

from tests.torch_required import require_torch

require_torch()


def test_a_cpu_lstm_call_holds_its_reordered_weights_and_the_gates_of_every_step() -> None:
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from gputui.fit.torch.misses import kernel_extra

    with FakeTensorMode():
        x = torch.empty(8, 64, 1024)  # batch-first: 512 rows of (batch x steps)
        w_ih, w_hh = torch.empty(4096, 1024), torch.empty(4096, 1024)
    op = torch.ops.aten.mkldnn_rnn_layer.default
    extra = kernel_extra(op, (x, w_ih, w_hh), {}, None, "cpu")
    assert extra == 2 * 4096 * 1024 * 4 + 512 * 4096 * 4
    assert kernel_extra(op, (x, w_ih, w_hh), {}, None, "cuda") == 0  # cuDNN: not this rule
