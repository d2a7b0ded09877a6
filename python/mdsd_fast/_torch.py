"""PyTorch, imported only when a function that needs it runs (the ``models`` extra), and the model
structure shared by the extractor's self-speculative drafts and the transformers audit."""

from __future__ import annotations

from typing import Any


def torch_module() -> Any:
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("this needs PyTorch and transformers: pip install 'mdsd_fast[models]'") from exc
    return torch


def decoder_layers(model: Any) -> tuple[Any, str]:
    """The ModuleList of decoder layers and the attribute path that holds it."""
    torch = torch_module()
    for path in ("model.layers", "transformer.h", "model.decoder.layers", "gpt_neox.layers"):
        obj = model
        try:
            for part in path.split("."):
                obj = getattr(obj, part)
        except AttributeError:
            continue
        if isinstance(obj, torch.nn.ModuleList):
            return obj, path
    n = getattr(model.config, "num_hidden_layers", None)
    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.ModuleList) and len(mod) == n:
            return mod, name
    raise ValueError("cannot find the decoder layers of this model")
