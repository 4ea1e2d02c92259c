"""A multimodal model's vision tower at inference: what its forward holds for one image.

The tower (SigLIP, CLIP: fit.importers.hfvision) encodes each image before the text
model's prefill, under sdpa (no (patches x patches) probabilities), and hands the text
model `tokens_per_image` embeddings; its activations are freed before the first text
layer runs, so its peak is a moment of its own. One image per sequence at the config's
`image_size` is assumed (and said). Per image, in the activation dtype: the pixel
values, and the larger of a layer's two moments: the attention's (residual, norm
output, q, k, v and the attention output: 6 x width per patch) and the MLP's (residual,
norm output, fc1's output and the activation's: 2 x width + 2 x intermediate).
"""

from __future__ import annotations

from gputui.fit.transformer.config import VisionTower


def tower_forward_bytes(tower: VisionTower, act_bytes: int) -> float:
    """Bytes one image's trip through the tower holds at its largest moment."""
    per_patch = max(6 * tower.hidden, 2 * tower.hidden + 2 * tower.intermediate)
    pixels = tower.channels * tower.image_size**2
    return float(act_bytes * (tower.patches * per_patch + pixels))


def tower_note(tower: VisionTower) -> str:
    return (
        f"vision tower ({tower.kind.removesuffix('_vision_model')}, {tower.layers} layers) and "
        f"projector counted: {tower.params:,} parameters; activations for one "
        f"{tower.image_size}x{tower.image_size} image per sequence ({tower.patches:,} patches, "
        f"{tower.tokens_per_image} tokens to the text model) in inference and generate; in "
        "training the tower's saved activations are not counted"
    )
