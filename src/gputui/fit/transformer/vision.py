"""A multimodal model's vision tower at inference: what its forward holds for one image.

The tower (SigLIP, CLIP: fit.importers.hfvision) encodes each image before the text
model's prefill, under sdpa (no (patches x patches) probabilities), and hands the text
model `tokens_per_image` embeddings; its activations are freed before the first text
layer runs, so its peak is a moment of its own. One image per sequence at the config's
`image_size` is assumed (and said). Per image, in the activation dtype, the pixel values
and, per token the layers run on, the larger of a layer's two moments, measured on CPU
with transformers 5.25's SiglipVisionModel and CLIPVisionModel (exact at 4 and 2 layers,
widths 384 and 1,152, images 336 to 896):
  * the MLP's: the embeddings' output (a local of the tower's forward through all its
    layers), the residual, the norm output, fc1's output, the activation's output (CLIP's
    quick_gelu, x * sigmoid(1.702 x), one intermediate more) and fc2's output being
    written: 4 x width + 2 (3) x intermediate;
  * the attention's: the embeddings' output, the residual, the norm output, q, k, v, the
    kernel's output and o_proj's: 8 x width.
"""

from __future__ import annotations

from gputui.fit.transformer.config import VisionTower


def tower_forward_bytes(tower: VisionTower, act_bytes: int) -> float:
    """Bytes one image's trip through the tower holds at its largest moment."""
    act_outputs = 3 if tower.activation == "quick_gelu" else 2
    per_token = max(8 * tower.hidden, 4 * tower.hidden + act_outputs * tower.intermediate)
    pixels = tower.channels * tower.image_size**2
    return float(act_bytes * (tower.tokens * per_token + pixels))


def tower_note(tower: VisionTower) -> str:
    return (
        f"vision tower ({tower.kind.removesuffix('_vision_model')}, {tower.layers} layers) and "
        f"projector counted: {tower.params:,} parameters; activations for one "
        f"{tower.image_size}x{tower.image_size} image per sequence ({tower.patches:,} patches, "
        f"{tower.tokens_per_image} tokens to the text model) in inference and generate; in "
        "training the tower's saved activations are not counted"
    )
