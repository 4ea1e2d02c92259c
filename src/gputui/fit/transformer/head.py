"""What a no-grad forward keeps alive at the LM head, with labels (eval) and without (inference).

Without labels (serving, batch scoring: `model(input_ids)` under torch.no_grad)
the head's moment is the final norm's output, still held by the model's output
object, and the logits of every position in the activation dtype: nothing else
is made. With labels, transformers' loss (`ForCausalLMLoss`) upcasts the logits
to fp32 (`logits.float()`: a copy unless they already are fp32) and
cross-entropy's log-softmax writes one more fp32 tensor of the same shape, all
alive together before the mean reduces them; the labels are shifted by padding
them (`pad(labels, (0, 1))`) and copying the slice from position 1 (two int64
tensors of the batch's tokens). The labels tensor itself is the caller's, like
the token ids.
"""

from __future__ import annotations

from gputui.fit.transformer.activations import Acts


def head_acts(mode: str, stream_h: float, act: int, vocab: float) -> tuple[str, Acts]:
    """(phase name, bytes per token) of the head for `mode` "inference" or "eval".

    `stream_h` is the final hidden state's bytes per token, `act` the logits' element
    bytes and `vocab` the vocabulary on this GPU (split by tensor parallelism)."""
    logits = act * vocab
    if mode == "inference":
        return "logits", Acts(stream_h + logits)
    upcast = 4 * vocab if act < 4 else 0.0
    shifted_labels = 2 * 8
    return "logits and loss", Acts(stream_h + logits + upcast + 4 * vocab + shifted_labels)


def encoder_logits(stream_h: float, act: int, vocab: float) -> Acts:
    """A masked-LM encoder's no-grad head (BERT, ModernBERT): the last hidden state and the
    head's transform output are alive while the decoder writes the logits."""
    return Acts(2 * stream_h + act * vocab)
