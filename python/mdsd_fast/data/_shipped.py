"""The datasets shipped with the package (the ``.npz`` files next to this module) and
:func:`load_dataset`."""

from __future__ import annotations

import os
from pathlib import Path

from ._dataset import LMDataset

DEFAULT_DATASET_FILE = "smollm2_135m.npz"
#: model name -> file of its shipped data in mdsd_fast/data (the first is the default)
SHIPPED_MODELS: dict[str, str] = {"smollm2-135m": DEFAULT_DATASET_FILE, "gemma3-270m": "gemma3_270m.npz"}


def shipped_model(model: str | None) -> str:
    """The key of :data:`SHIPPED_MODELS` for ``model`` (None: the default, SmolLM2-135M)."""
    if model is None:
        return next(iter(SHIPPED_MODELS))
    if not isinstance(model, str) or model not in SHIPPED_MODELS:
        raise ValueError(f"model: expected one of {', '.join(SHIPPED_MODELS)}, got {model!r}")
    return model


def default_dataset_path(model: str | None = None) -> Path:
    """Path of the dataset shipped inside the package for ``model`` (default: SmolLM2-135M)."""
    return Path(__file__).resolve().parent / SHIPPED_MODELS[shipped_model(model)]


def load_dataset(path: str | os.PathLike[str] | None = None, *, model: str | None = None) -> LMDataset:
    """Load a stored dataset; ``None`` loads the one shipped with the package: ``model`` =
    ``"smollm2-135m"`` (the default: SmolLM2-135M-Instruct, layer-skip and bigram drafts,
    V = 49,152) or ``"gemma3-270m"`` (Gemma-3-270M, V = 262,144, a sparse sample with its
    truncation recorded per row); docs/guide/data.md."""
    if path is not None and model is not None:
        raise ValueError("load_dataset: give a path or a model, not both")
    if path is None:
        path = default_dataset_path(model)
        if not path.exists():
            raise FileNotFoundError(f"the shipped dataset is missing from this install ({path})")
    return LMDataset.load(path)
