"""Real next-token distributions and draft trees from causal language models (the ``models`` extra).

``torch`` and ``transformers`` are imported only when a function runs; ``import mdsd_fast`` never
imports them. :func:`extract` scores prompts with a target and its drafts
(:mod:`~mdsd_fast.extract.distributions`), :mod:`~mdsd_fast.extract.drafts` has the draft models,
:mod:`~mdsd_fast.extract.presets` the models the package ships data for, and
:mod:`~mdsd_fast.extract.trees` grows draft trees.
"""

from __future__ import annotations

from .distributions import Prompt, extract, generate, load_model, load_prompts, load_smollm2, smollm2_gguf_path
from .drafts import LayerSkipDraft, ModelDraft, NGramDraft, ngram_draft_from_text, softmax_T
from .presets import PRESETS, ModelPreset, build_default_dataset, build_model_dataset, preset
from .trees import build_tree_dataset, grow_tree

__all__ = [
    "extract",
    "generate",
    "load_model",
    "load_prompts",
    "load_smollm2",
    "smollm2_gguf_path",
    "Prompt",
    "ModelDraft",
    "LayerSkipDraft",
    "NGramDraft",
    "ngram_draft_from_text",
    "softmax_T",
    "PRESETS",
    "ModelPreset",
    "preset",
    "build_default_dataset",
    "build_model_dataset",
    "build_tree_dataset",
    "grow_tree",
]
