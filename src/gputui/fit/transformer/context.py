"""A transformer's context: the default prompt, and a prompt + new tokens held to the model's.

`gputui fit` and the models TOML share these rules: a prompt plus new tokens
beyond the context the model was trained for (max_position_embeddings) is
refused unless the user asks for it with --allow-longer-context (TOML:
`allow_longer_context = true`); then the answer says it is beyond the trained
context. A learned position table has no rows beyond its size, so there even
the opt-in cannot lift the limit.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gputui.core.errors import UserError


def default_seq(cfg: Any, mode: str, new_tokens: int) -> int:
    """The prompt (or sequence) length when none is given: 2048, or what the context leaves."""
    max_pos = cfg.max_position_embeddings
    seq: int = min(2048, max_pos or 2048)
    if mode == "generate" and max_pos and seq + new_tokens > max_pos:
        seq = max(1, max_pos - new_tokens)
    return seq


def check_context(
    cfg: Any,
    seq: int,
    new_tokens: int,
    mode: str,
    allow: bool,
    keys: tuple[str, str, str] = ("--seq-len", "--new-tokens", "--allow-longer-context"),
    new_given: bool = False,
) -> None:
    """Refuse a prompt + new tokens beyond the model's context (UserError naming the flag or
    key in `keys`: the sequence, the new tokens, the opt-in)."""
    max_pos = cfg.max_position_embeddings
    context = seq + (new_tokens if mode == "generate" else 0)
    if not max_pos or context <= max_pos:
        return
    seq_key, new_key, allow_key = keys
    if seq > max_pos:
        key, what = seq_key, f"{seq}"
    else:  # the new tokens carry it past
        key = new_key if new_given else seq_key
        what = f"{seq} + {new_tokens} new tokens = {context}"
    if cfg.learned_positions:
        raise UserError(
            f"{key}: {what} is beyond the model's learned position table of {max_pos} positions"
        )
    if not allow:
        raise UserError(
            f"{key}: {what} is beyond the model's context of {max_pos} tokens "
            f"(max_position_embeddings); {allow_key} estimates it anyway"
        )


def mark_longer_context(est: Any, allow: bool) -> Any:
    """With --allow-longer-context, say when the longest answer goes past the trained context."""
    max_pos = est.model.config.max_position_embeddings
    if not allow or not max_pos or est.longest_context <= max_pos:
        return est
    note = (
        f"longest context {est.longest_context:,} is beyond the trained context of "
        f"{max_pos:,} tokens (max_position_embeddings): memory only, asked for with "
        "--allow-longer-context"
    )
    return replace(est, warnings=(*est.warnings, note))
