"""What a layer keeps for backward, tensor by tensor, for the activation the config names.

GPT-2's MLP runs `gelu_new`, GELU-tanh written in Python: autograd saves x (pow),
the tanh output, 0.5*x and 1+tanh, four tensors of the MLP width where F.gelu keeps
one. gputui read GPT-2's activation as "gelu" and under-estimated GPT-2 training by
15 % (b4 s512, CPU fp32, measured with benchmarks/hf_train_memory.py). The figures
below are derived from the mechanism (each saved tensor named); the torch tests,
skipped where torch is not installed, count the tensors autograd really saves.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gputui.fit.core.target import Target
from gputui.fit.importers.hfkeys import from_hf_dict
from gputui.fit.transformer.activations import layer_acts
from gputui.fit.transformer.activations_fn import act_saved, known_activation
from gputui.fit.transformer.estimate import estimate, memory
from gputui.fit.transformer.model import TransformerModel, from_config
from gputui.fit.transformer.workload import Workload

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "llm"
F32 = 4
MIB = 2**20


def config(name: str, **over: Any) -> dict[str, Any]:
    raw: dict[str, Any] = json.loads((EXAMPLES / f"{name}.json").read_text())
    return {**raw, **over}


def gpt2(**over: Any) -> TransformerModel:
    return from_config(from_hf_dict(config("gpt2", **over)), "gpt2", "test")


def train(attention: str = "sdpa", **kw: Any) -> Workload:
    return Workload(
        mode="train", batch_size=4, seq_len=512, precision="fp32", weights="fp32",
        backend="cpu", attention=attention, **kw,
    )  # fmt: skip


def saved_per_token(m: TransformerModel, wl: Workload) -> float:
    b = m.layout.blocks[0]
    acts = layer_acts(m.config, wl, b.linears, b.moe)
    assert acts.saved.per_seq_sq == 0  # a fused kernel: nothing (seq x seq) is kept
    return acts.saved.per_token


def gpt2_layer_mechanism(mlp_tensors: int, h: int = 768, heads: int = 12) -> int:
    """One GPT-2 layer under sdpa without attention dropout, fp32 on CPU, per token."""
    inter = 4 * h
    return (
        (F32 * h + 8)  # ln_1: its input, fp32 mean and rstd
        + F32 * h  # c_attn's input (ln_1's output)
        + 3 * F32 * h  # q, k, v (views of c_attn's output), kept by sdpa
        + F32 * h  # sdpa's output, which is also c_proj's input (the kernel lays it out
        # batch, seq, heads, dim: the transpose back and .contiguous() copy nothing)
        + F32 * heads  # sdpa's fp32 logsumexp
        + F32 * h  # resid dropout's mask (float on CPU)
        + (F32 * h + 8)  # ln_2
        + F32 * h  # c_fc's input
        + mlp_tensors * F32 * inter  # the activation's saved tensors
        + F32 * inter  # the activation's output, kept by the MLP's c_proj
        + F32 * h  # the MLP's dropout mask
    )


def test_gpt2_config_runs_gelu_new() -> None:
    """GPT2Config's activation_function (default gelu_new) decides the MLP; it was not read."""
    assert gpt2().config.activation == "gelu_new"
    raw = config("gpt2")
    del raw["activation_function"]
    assert from_hf_dict(raw).activation == "gelu_new"  # the class default
    assert gpt2(activation_function="gelu").config.activation == "gelu"


def test_gpt2_layer_saves_four_gelu_new_tensors() -> None:
    """Per layer and token: 92,224 B as saved_tensors_hooks counts on GPT-2 small
    (benchmarks/hf_train_memory.py --saved); the estimate counted sdpa's output twice
    (once as the kernel's, once as c_proj's input: one storage), 95,296 B."""
    m = gpt2(attn_pdrop=0.0)
    assert saved_per_token(m, train()) == gpt2_layer_mechanism(4) == 92_224


def test_eager_attention_keeps_the_contiguous_copy_o_proj_reads() -> None:
    """Eager's probs @ v is (batch, heads, seq, dim): its transpose back is copied."""
    m = gpt2(attn_pdrop=0.0)
    sdpa = layer_acts(m.config, train(), m.layout.blocks[0].linears, False).saved.per_token
    eager = layer_acts(m.config, train("eager"), m.layout.blocks[0].linears, False)
    # eager: no kernel output or logsumexp, but the copy o_proj reads
    assert eager.saved.per_token == sdpa - F32 * 12


def test_exact_gelu_keeps_one_tensor_of_the_mlp_width() -> None:
    m = gpt2(attn_pdrop=0.0, activation_function="gelu")
    assert saved_per_token(m, train()) == gpt2_layer_mechanism(1)
    fast = gpt2(attn_pdrop=0.0, activation_function="gelu_fast")
    assert saved_per_token(fast, train()) == gpt2_layer_mechanism(7)


def test_gpt2_small_training_peak_matches_the_measurement() -> None:
    """benchmarks/hf_train_memory.py gpt2.json:4:512 --set attn_pdrop=0.0 measured
    5,174.15 MiB (two AdamW steps, transformers 5.24, torch 2.13 CPU); the estimate
    was 4,382.15 MiB (-15.3 %) before the activation was read, 5,246.15 MiB after."""
    m = gpt2(attn_pdrop=0.0)
    phase, b = memory(m, train()).breakdown(4, 512)
    measured = 5_174.15 * MIB
    assert phase == "loss backward"
    assert -0.05 <= (b.total - measured) / measured <= 0.10


def test_other_families_pick_up_their_activation(example: Callable[[str], Any]) -> None:
    assert example("gpt-j-6b").config.activation == "gelu_new"
    assert example("opt-350m").config.activation == "relu"
    assert example("pythia-410m").config.activation == "gelu"
    assert example("distilbert-base-uncased").config.activation == "gelu"
    phi = from_hf_dict({"model_type": "phi"})
    assert phi.activation == "gelu_new"
    # GPT-NeoX-20B runs gelu_fast: seven tensors of the MLP width
    neox = from_hf_dict({"model_type": "gpt_neox", "hidden_act": "gelu_fast"})
    assert act_saved(neox.activation).saved == 7


def test_gptj_mlp_keeps_gelu_new_tensors(example: Callable[[str], Any]) -> None:
    m = example("gpt-j-6b")
    wl = train()
    exact = from_config(
        from_hf_dict(config("gpt-j-6b", activation_function="gelu")), "gptj-gelu", "test"
    )
    inter = m.config.intermediate_size
    assert saved_per_token(m, wl) - saved_per_token(exact, wl) == 3 * F32 * inter


def test_gated_gelu_new_keeps_its_tensors_too() -> None:
    """T5 v1.1 / Flan-T5's gated-gelu runs gelu_new on the gate: 3 more than gated-silu."""
    base = {"model_type": "t5", "d_model": 512, "d_ff": 1024, "num_layers": 2, "d_kv": 64}
    gelu = from_config(from_hf_dict({**base, "feed_forward_proj": "gated-gelu"}), "t5", "t")
    silu = from_config(from_hf_dict({**base, "feed_forward_proj": "gated-silu"}), "t5", "t")
    assert gelu.config.activation == "gelu_new"
    wl = train()
    b_g, b_s = gelu.layout.blocks[0], silu.layout.blocks[0]  # an encoder layer
    diff = (
        layer_acts(gelu.config, wl, b_g.linears, b_g.moe).saved.per_token
        - layer_acts(silu.config, wl, b_s.linears, b_s.moe).saved.per_token
    )
    assert diff == 3 * F32 * 1024


def test_unknown_activation_is_said() -> None:
    m = gpt2(activation_function="my_act")
    assert not known_activation("my_act")
    est = estimate(m, train(), Target(name="cpu", memory_total=2**40))
    assert any("'my_act'" in w and "not known" in w for w in est.warnings)
    ok = estimate(gpt2(), train(), Target(name="cpu", memory_total=2**40))
    assert not any("not known" in w for w in ok.warnings)


# ---------------------------------------------------------------- against torch, if installed


def _torch_saved_widths(fn: Callable[[Any], Any], n: int = 4096) -> tuple[float, bool]:
    torch = pytest.importorskip("torch")
    x = torch.randn(n, requires_grad=True) * 1.0
    seen: dict[int, int] = {}

    def pack(t: Any) -> Any:
        if t.numel() >= n:
            seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = fn(x)
    out = y.untyped_storage().data_ptr()
    rest = sum(v for k, v in seen.items() if k != out)
    return rest / (x.element_size() * n), out in seen


ACTS = ["gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", "gelu_python", "gelu_10",
        "quick_gelu", "silu", "relu", "relu2", "tanh", "sigmoid", "mish"]  # fmt: skip


@pytest.mark.parametrize("name", ACTS)
def test_table_equals_what_autograd_saves(name: str) -> None:
    activations = pytest.importorskip("transformers.activations")
    widths, keeps = _torch_saved_widths(activations.ACT2FN[name])
    assert (widths, keeps) == (act_saved(name).saved, act_saved(name).keeps_output)


def test_gpt2_layer_against_transformers() -> None:
    """A two-layer GPT-2 built by transformers: the bytes its first layer saves."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    raw = {"model_type": "gpt2", "n_embd": 128, "n_layer": 2, "n_head": 4, "vocab_size": 512,
           "n_positions": 256, "attn_pdrop": 0.0}  # fmt: skip
    cfg = transformers.AutoConfig.for_model(**raw)
    cfg._attn_implementation = "sdpa"
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).train()
    inside: list[bool] = [False]
    layer = model.transformer.h[0]
    layer.register_forward_pre_hook(lambda *_: inside.__setitem__(0, True))
    layer.register_forward_hook(lambda *_: inside.__setitem__(0, False))
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t: Any) -> Any:
        s = t.untyped_storage()
        if inside[0] and s.data_ptr() not in params:
            seen[s.data_ptr()] = s.nbytes()
        return t

    batch, seq = 2, 64
    ids = torch.randint(0, 512, (batch, seq))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(ids, labels=ids, use_cache=False)
    ours = from_config(from_hf_dict(raw), "gpt2-tiny", "test")
    wl = train()
    assert sum(seen.values()) == saved_per_token(ours, wl) * batch * seq
