"""Draft models for the extractor (:mod:`mdsd_fast.lm`): what gives q at each position.

:class:`ModelDraft` is any Hugging Face causal LM with the target's vocabulary;
:class:`LayerSkipDraft` is the target with some decoder layers skipped ("self-speculative", no
extra weights); :class:`NGramDraft` is a token n-gram model trained on a text corpus. Each has
``logits(ids) -> (L, V)`` and a ``spec`` (the metadata a dataset records). ``torch`` is imported
only when one runs (the ``models`` extra).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .._torch import decoder_layers, torch_module

__all__ = ["LayerSkipDraft", "ModelDraft", "NGramDraft", "ngram_draft_from_text", "softmax_T"]


# distributions
def softmax_T(logits: Any, temperature: float) -> np.ndarray:
    """softmax(logits / T) in float64 (rows of a 2-D input); ``-inf`` logits give 0."""
    torch = torch_module()
    x = torch.as_tensor(logits).to(torch.float64) / float(temperature)
    return torch.softmax(x, dim=-1).numpy()


def _forward_logits(model: Any, ids: Any, **kw: Any) -> Any:
    """Logits (L, V) of a causal LM on one sequence, without a cache (``kw``: e.g. a tree
    attention mask and position ids, see mdsd_fast.extract.trees)."""
    torch = torch_module()
    with torch.no_grad():
        out = model(input_ids=ids[None, :], use_cache=False, **kw)
    return out.logits[0]


class ModelDraft:
    """A separate causal LM (same tokenizer/vocabulary as the target) used as the draft."""

    def __init__(self, model: Any, name: str = "model") -> None:
        self.model = model
        self.name = name

    @property
    def spec(self) -> dict[str, Any]:
        return {"kind": "model", "model": _model_name(self.model)}

    def logits(self, ids: Any, **kw: Any) -> Any:
        return _forward_logits(self.model, ids, **kw)


class LayerSkipDraft:
    """The target itself with some decoder layers skipped (no extra weights are made).

    ``skip`` lists 0-based layer indices. While a draft forward runs, the model's layer list is
    swapped for the kept layers and restored afterwards.
    """

    def __init__(self, model: Any, skip: Iterable[int], name: str | None = None) -> None:
        self.model = model
        self.skip = tuple(sorted({int(i) for i in skip}))
        if not self.skip:
            raise ValueError("skip: name at least one layer to skip (skipping none is the target itself)")
        layers, _ = decoder_layers(model)
        n = len(layers)
        if any(i < 0 or i >= n for i in self.skip):
            raise ValueError(f"skip indices must be in [0, {n})")
        if len(self.skip) >= n:
            raise ValueError("cannot skip every layer")
        self.name = name or "skip" + "-".join(map(str, self.skip))

    @property
    def spec(self) -> dict[str, Any]:
        layers, _ = decoder_layers(self.model)
        return {
            "kind": "layer_skip",
            "model": _model_name(self.model),
            "skip_layers": list(self.skip),
            "num_layers": len(layers),
        }

    def logits(self, ids: Any, **kw: Any) -> Any:
        torch = torch_module()
        layers, path = decoder_layers(self.model)
        parent = self.model
        *head, last = path.split(".")
        for part in head:
            parent = getattr(parent, part)
        kept = torch.nn.ModuleList([m for i, m in enumerate(layers) if i not in self.skip])
        # Models that pick each layer's attention (sliding or full, and its RoPE base) by list
        # index from config.layer_types (Gemma 3) need that list cut the same way.
        cfg: Any = getattr(self.model, "config", None)
        types: Any = getattr(cfg, "layer_types", None)
        cut_types = isinstance(types, list) and len(types) == len(layers)
        parent._modules[last] = kept
        if cut_types:
            cfg.layer_types = [t for i, t in enumerate(types) if i not in self.skip]
        try:
            return _forward_logits(self.model, ids, **kw)
        finally:
            parent._modules[last] = layers
            if cut_types:
                cfg.layer_types = types


class NGramDraft:
    """An interpolated token n-gram model (order >= 1) trained on token ids of a text corpus.

    q(x | h) = lam * c(h, x) / c(h) + (1 - lam) * q_{n-1}(x | h'), ending in the unigram
    distribution of the corpus (add-``delta`` over the corpus's own tokens, so q is 0 for tokens
    the corpus never contains). Its "logits" are log q, so q at temperature T is q^(1/T)
    renormalised.
    """

    def __init__(
        self,
        token_ids: Sequence[int],
        vocab_size: int,
        order: int = 2,
        lam: float = 0.7,
        delta: float = 0.1,
        name: str | None = None,
        corpus: str = "",
    ) -> None:
        if order < 1:
            raise ValueError("order must be >= 1")
        ids = np.asarray(token_ids, dtype=np.int64)
        self.vocab_size = int(vocab_size)
        self.order, self.lam, self.delta = int(order), float(lam), float(delta)
        self.name = name or f"ngram{order}"
        self.corpus = corpus
        uni = np.bincount(ids, minlength=self.vocab_size).astype(np.float64)
        seen = uni > 0
        uni[seen] += self.delta
        self._unigram = uni / uni.sum()
        self._counts: list[dict[tuple[int, ...], dict[int, int]]] = []
        for k in range(1, self.order):
            table: dict[tuple[int, ...], dict[int, int]] = {}
            for i in range(k, ids.size):
                h = tuple(ids[i - k : i].tolist())
                nxt = table.setdefault(h, {})
                nxt[int(ids[i])] = nxt.get(int(ids[i]), 0) + 1
            self._counts.append(table)

    @property
    def spec(self) -> dict[str, Any]:
        return {"kind": "ngram", "order": self.order, "lambda": self.lam, "delta": self.delta, "corpus": self.corpus}

    def probs(self, history: Sequence[int]) -> np.ndarray:
        q = self._unigram.copy()
        for k in range(1, self.order):
            if len(history) < k:
                break
            nxt = self._counts[k - 1].get(tuple(int(t) for t in history[len(history) - k :]))
            if not nxt:
                break
            c = np.zeros(self.vocab_size)
            c[list(nxt)] = list(nxt.values())
            q = self.lam * c / c.sum() + (1.0 - self.lam) * q
        return q

    def logits(self, ids: Any) -> Any:
        torch = torch_module()
        seq = [int(t) for t in ids.tolist()]
        out = np.stack([self.probs(seq[: i + 1]) for i in range(len(seq))])
        with np.errstate(divide="ignore"):
            return torch.from_numpy(np.log(out))


def ngram_draft_from_text(tokenizer: Any, text: str, vocab_size: int, order: int = 2, **kw: Any) -> NGramDraft:
    """An :class:`NGramDraft` trained on ``text`` tokenised by ``tokenizer`` (one paragraph at a time)."""
    ids: list[int] = []
    for para in text.split("\n\n"):
        if para.strip():
            ids.extend(tokenizer(para.strip(), add_special_tokens=False)["input_ids"])
    return NGramDraft(ids, vocab_size, order, **kw)


def _model_name(model: Any) -> str:
    cfg = getattr(model, "config", None)
    return str(getattr(cfg, "_name_or_path", "") or type(model).__name__)


def _as_draft(d: Any, name: str) -> Any:
    return d if hasattr(d, "logits") and not hasattr(d, "config") else ModelDraft(d, name)
