"""Hugging Face models from the files users have: a config.json, a model folder with
*.safetensors, or `ORG/NAME` in the local Hugging Face cache (offline, never the network).

A folder's safetensors headers give the exact parameter count and the stored bytes
and dtypes; `quantization_config` in config.json says how a GPTQ/AWQ/bitsandbytes/fp8
checkpoint stores its linears.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

from gputui.core import inputfile, pathprobe
from gputui.core.errors import UserError
from gputui.core.textsafe import visible
from gputui.fit.importers.hfkeys import from_hf_dict
from gputui.fit.importers.safetensors import SafetensorsError, read_header
from gputui.fit.transformer.config import ConfigError
from gputui.fit.transformer.model import TransformerModel, from_config

# huggingface_hub's rule for a repo id (validate_repo_id): ASCII word characters, '-' and '.'
MAX_REPO_ID = 96
_REPO_PART = re.compile(r"[A-Za-z0-9_.-]+")
DTYPE_FORMAT = {"F32": "fp32", "F16": "fp16", "BF16": "bf16", "F8_E4M3": "fp8", "F8_E5M2": "fp8"}


def read_json(path: Path) -> object:
    """A config.json through the one input boundary (special files, size, depth, digits)."""
    return inputfile.read_json(path, what="config file")


def load_config(path: Path, name: str | None = None) -> TransformerModel:
    raw = read_json(path)
    if not isinstance(raw, dict):
        raise UserError(
            f"{visible(str(path))}: expected a JSON object (a Hugging Face config.json)"
        )
    try:
        cfg = from_hf_dict(raw)
    except ConfigError as exc:
        raise UserError(f"{visible(str(path))}: {visible(str(exc))}") from None
    label = name or (path.parent.name if path.name == "config.json" else path.stem)
    return from_config(cfg, visible(label), str(path))


def load_folder(folder: Path, name: str | None = None) -> TransformerModel:
    config = folder / "config.json"
    if not pathprobe.is_file(config):
        raise UserError(f"{pathprobe.short(folder)}: no config.json in this folder")
    model = load_config(config, name or folder.name)
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        return model
    dtypes: Counter[str] = Counter()
    elements = 0
    stored = 0
    for f in files:
        try:
            tensors = read_header(f)
        except SafetensorsError as exc:
            raise UserError(f"{visible(str(f))}: {visible(str(exc))}") from None
        for t in tensors:
            dtypes[t.dtype] += t.elements
            elements += t.elements
            stored += t.nbytes
    fmt = None
    exact = None
    if model.config.quantization is None:
        exact = elements
        main = dtypes.most_common(1)[0][0] if dtypes else None
        fmt = DTYPE_FORMAT.get(main or "")
    else:
        fmt = model.config.quantization.weights
    warnings = model.warnings
    if exact is not None and exact != model.layout.params:
        warnings += (
            f"the safetensors hold {exact:,} parameters, the config describes {model.layout.params:,}: "
            "the checkpoint's own count is used for the weights",
        )
    # the config's model, now with what the checkpoint itself says
    return replace(
        model,
        source=str(folder),
        kind="hf-folder",
        exact_params=exact,
        stored_bytes=stored,
        stored_format=fmt,
        stored_dtypes=dict(dtypes),
        warnings=warnings,
    )


def hub_cache() -> Path:
    """Where huggingface_hub keeps downloads: HF_HUB_CACHE, HF_HOME/hub, or ~/.cache/huggingface/hub."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]) / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "huggingface" / "hub"


def cached_snapshot(repo_id: str) -> Path:
    """The local snapshot of `ORG/NAME` (the one refs/main points at, else the newest)."""
    parts = repo_id.split("/")
    if len(parts) != 2 or not all(parts) or any(p in (".", "..") for p in parts):
        raise UserError(f"--hf: expected ORG/NAME, got {pathprobe.short(repo_id, 80)!r}")
    if len(repo_id) > MAX_REPO_ID or not all(_REPO_PART.fullmatch(p) for p in parts):
        raise UserError(
            f"--hf: a Hugging Face repo id is ORG/NAME of letters, digits, '-', '_' and '.', "
            f"at most {MAX_REPO_ID} characters, got {pathprobe.short(repo_id, 80)!r}"
        )
    cache = hub_cache()
    repo = cache / f"models--{parts[0]}--{parts[1]}"
    snapshots = repo / "snapshots"
    if not pathprobe.is_dir(snapshots):
        raise UserError(
            f"--hf {visible(repo_id)}: not in the local Hugging Face cache ({visible(str(cache))}); "
            "gputui works offline: download it first (e.g. `huggingface-cli download "
            f"{visible(repo_id)} config.json`) or pass the path of its config.json"
        )
    ref = repo / "refs" / "main"
    if pathprobe.is_file(ref):
        rev = _revision(ref)
        if rev is not None and pathprobe.is_file(snapshots / rev / "config.json"):
            return snapshots / rev
    try:
        entries = list(snapshots.iterdir())
    except OSError as exc:
        raise UserError(
            f"--hf {visible(repo_id)}: cannot list {pathprobe.short(snapshots)}: "
            f"{visible(exc.strerror or str(exc))}"
        ) from None
    candidates = [(st.st_mtime, s) for s in entries if (st := _config_stat(s)) is not None]
    if not candidates:
        raise UserError(f"--hf {visible(repo_id)}: cached, but no snapshot has a config.json")
    return max(candidates)[1]


def _config_stat(snapshot: Path) -> os.stat_result | None:
    """The snapshot folder's stat when it holds a config.json (its mtime picks the newest)."""
    if not pathprobe.is_file(snapshot / "config.json"):
        return None
    return pathprobe.probe(snapshot)


def _revision(ref: Path) -> str | None:
    """The commit refs/main names, or None when it is not one (unreadable, not a plain
    name): a ref such as "../../elsewhere" must not lead out of the snapshots folder."""
    try:
        with ref.open("rb") as f:
            data = f.read(256)
    except OSError:
        return None
    rev = data.decode("ascii", "replace").strip()
    if not 0 < len(rev) <= 128 or not all(c.isascii() and (c.isalnum() or c in "-_.") for c in rev):
        return None
    return None if rev in (".", "..") else rev


def load_cached(repo_id: str) -> TransformerModel:
    return load_folder(cached_snapshot(repo_id), repo_id)


def load_path(path: Path) -> TransformerModel:
    """A config.json or a model folder."""
    if pathprobe.is_dir(path):
        return load_folder(path)
    return load_config(path)
