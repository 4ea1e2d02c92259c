"""transformers' own cache against gputui's kv_cache figure (skips without torch/transformers).

Tiny random models: after a prefill and after generate(), the bytes the cache's K and V
storage owns (`untyped_storage().nbytes()`, a view's whole tensor) equal the estimate's
`kv_cache` at the prefill and at the last decode step.
"""

from __future__ import annotations

from typing import Any

import pytest

from gputui.fit.importers.hfkeys import from_hf_dict
from gputui.fit.transformer.estimate import memory
from gputui.fit.transformer.model import from_config
from gputui.fit.transformer.workload import Workload

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

CONFIGS = {
    "gpt2": dict(model_type="gpt2", n_embd=64, n_layer=2, n_head=4, n_positions=256,
                 vocab_size=512),
    "gpt_neox": dict(model_type="gpt_neox", hidden_size=64, num_hidden_layers=2,
                     num_attention_heads=4, intermediate_size=256, vocab_size=512,
                     max_position_embeddings=256),
    "mistral": dict(model_type="mistral", hidden_size=64, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=2, intermediate_size=128,
                    vocab_size=512, max_position_embeddings=256, sliding_window=24),
    "gemma3": dict(model_type="gemma3_text", hidden_size=64, num_hidden_layers=3,
                   num_attention_heads=2, num_key_value_heads=1, head_dim=32,
                   intermediate_size=128, vocab_size=512, max_position_embeddings=256,
                   sliding_window=24,
                   layer_types=["sliding_attention", "sliding_attention", "full_attention"]),
}  # fmt: skip


def owned(cache: Any) -> int:
    return sum(
        x.keys.untyped_storage().nbytes() + x.values.untyped_storage().nbytes()
        for x in cache.layers
    )


@pytest.mark.parametrize(
    ("name", "prompt", "new"),
    [(name, 40, 6) for name in sorted(CONFIGS)]  # the prompt beyond the sliding windows
    # the window fills while decoding: a sliding layer shows window - 1 tokens but owns the
    # window's (the view into the step's torch.cat), which is what the estimate counts
    + [("mistral", 8, 40), ("gemma3", 8, 40)],
)
def test_cache_storage_equals_the_estimate(name: str, prompt: int, new: int) -> None:
    raw = CONFIGS[name]
    cfg = transformers.AutoConfig.for_model(**raw)
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    batch = 2
    ids = torch.randint(0, 512, (batch, prompt))
    with torch.no_grad():
        pre = model(ids, use_cache=True, logits_to_keep=1).past_key_values
        gen = model.generate(
            ids, attention_mask=torch.ones_like(ids), max_new_tokens=new, do_sample=False,
            return_dict_in_generate=True,
        ).past_key_values  # fmt: skip
    est = from_config(from_hf_dict(dict(raw)), name, "test")
    wl = Workload(mode="generate", batch_size=batch, seq_len=prompt, new_tokens=new,
                  weights="fp32", kv_dtype="fp32", backend="cpu")  # fmt: skip
    sm = memory(est, wl).stages[0]
    by_kv = {ph.kv: sm.parts(ph, batch, prompt).kv_cache for ph in sm.phases if ph.kv}
    assert by_kv["prompt"] == owned(pre)
    assert by_kv["context"] == owned(gen)
    window = raw.get("sliding_window")
    if window is not None and prompt + new > window:
        shown = {int(x.keys.shape[-2]) for x in gen.layers if x.is_sliding}
        assert shown == {window - 1}  # what attention sees; the storage holds the window
