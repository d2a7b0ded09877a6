"""Sampling constraints: the distribution an engine actually samples from, given logits.

Serving engines do not sample from ``softmax(logits)``: they divide by a temperature and cut the
tail with top-k, top-p (nucleus) and min-p first, each engine in its own order and with its own
tie rules. :class:`Logits` holds logits together with those settings and the engine whose rules
apply; every public function of the package that takes ``p`` or ``q`` accepts a ``Logits`` in
their place and works on the distribution it stands for. docs/guide/inputs.md gives the rules,
the engine source they come from and every difference between the engines.

Rules, computed in float64 whatever the input precision (z = logits / temperature):

========== ================================================================================
engine     order and tie rules
========== ================================================================================
"vllm"     min-p, then top-k, then top-p (vLLM V1 ``Sampler.sample``: min-p is an
           argmax-invariant logits processor run before ``apply_top_k_top_p``).
           top-k keeps every token tied with the k-th largest logit; top-p sorts ascending
           (ties by token id), drops a token when the cumulative mass up to it is <= 1 - top_p,
           and keeps the most probable token; greedy below temperature 1e-5.
"hf"       top-k, then top-p, then min-p (the order ``generate()`` builds the warpers in),
           with the same top-k and top-p rules as vLLM and ``min_tokens_to_keep``; greedy only
           at temperature 0 (``do_sample=False``).
"sglang"   top-k, top-p and min-p all read off the same sorted full distribution (the torch
           backend and SGLang's own sampling mask): top-k keeps exactly k tokens (ties to the
           lower id), top-p keeps a token when the mass before it is <= top_p; greedy below
           temperature 1e-6.
========== ================================================================================

min-p keeps a token when its probability is >= min_p times the largest probability (all three).
Greedy means a one-hot distribution at the largest logit, ties to the lower token id.

A draft vocabulary smaller than the target's (EAGLE-3) is mapped with ``d2t``, as EAGLE-3
checkpoints store it: ``d2t[i]`` is an offset, draft token i is target token ``i + d2t[i]``
(``token_map`` takes absolute target ids instead). The draft logits are placed into the target
vocabulary with -inf elsewhere, as vLLM's EAGLE-3 head does, before the constraints apply.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .args import check_alloc, int_array, integer, nbytes
from .rules import MAX_V, as_array

__all__ = ["Logits", "Engine", "ENGINES", "DEFAULT_ENGINE", "GREEDY_BELOW", "pair", "probabilities"]

Engine = Literal["vllm", "sglang", "hf"]
ENGINES: tuple[Engine, ...] = ("vllm", "sglang", "hf")
#: vLLM is the default: it is the most widely deployed of the three engines.
DEFAULT_ENGINE: Engine = "vllm"
#: A temperature below this is greedy decoding (vLLM's and SGLang's _SAMPLING_EPS; for HF only
#: temperature 0, i.e. ``do_sample=False``, is greedy).
GREEDY_BELOW: Mapping[str, float] = MappingProxyType({"vllm": 1e-5, "sglang": 1e-6, "hf": 0.0})


def _real(name: str, value: Any) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a real number, got {type(value).__name__}")
    x = float(value)
    if math.isnan(x):
        raise ValueError(f"{name}: got NaN")
    return x


def _integer(name: str, value: Any) -> int:
    return integer(name, value)


def _logit_rows(values: Any) -> NDArray[np.float64]:
    """Validated float64 (B, V) copy of the logits: -inf allowed (masked), NaN and +inf refused."""
    arr = as_array("values", values)
    if arr.dtype.kind != "f" or arr.dtype.itemsize not in (4, 8):
        raise TypeError(f"values: expected float32 or float64 logits, got dtype {arr.dtype}")
    if arr.ndim not in (1, 2):
        raise ValueError(f"values: expected shape (V,) or (B, V), got shape {arr.shape}")
    if arr.shape[-1] == 0:
        raise ValueError("values: the vocabulary is empty (V = 0)")
    if arr.shape[-1] > MAX_V:
        raise ValueError(f"values: V = {arr.shape[-1]} tokens is more than the supported {MAX_V}")
    rows = np.array(arr, dtype=np.float64, order="C", ndmin=2)
    for bad, what in ((np.isnan(rows), "NaN"), (rows == np.inf, "+inf (only -inf, a masked token, is allowed)")):
        hit = bad.any(axis=1)
        if hit.any():
            raise ValueError(f"values: row {int(np.argmax(hit))} contains {what}")
    dead = (rows == -np.inf).all(axis=1)
    if dead.any():
        raise ValueError(f"values: row {int(np.argmax(dead))} has no finite logit (every token is masked)")
    return rows


def _target_ids(d2t: Any, token_map: Any, vocab_size: Any, V: int) -> tuple[NDArray[np.int64] | None, int]:
    """Absolute target id of every draft token (None: no map) and the target vocabulary size."""
    if d2t is not None and token_map is not None:
        raise ValueError("d2t, token_map: give one map (d2t: EAGLE-3 offsets; token_map: absolute ids), not both")
    if vocab_size is not None:
        vocab_size = _integer("vocab_size", vocab_size)
        if not 1 <= vocab_size <= MAX_V:
            raise ValueError(f"vocab_size: expected 1 <= vocab_size <= {MAX_V}, got {vocab_size}")
    name, raw = ("d2t", d2t) if d2t is not None else ("token_map", token_map)
    if raw is None:
        if vocab_size is not None and vocab_size != V:
            raise ValueError(
                f"vocab_size: {vocab_size} differs from the logits' V = {V} and no d2t / token_map is given"
            )
        return None, V
    if vocab_size is None:
        raise ValueError(f"vocab_size: required with {name} (the target vocabulary the draft maps into)")
    m = as_array(name, raw)
    if m.dtype == np.bool_ or m.dtype.kind not in "iu":
        raise TypeError(f"{name}: expected integer token ids, got dtype {m.dtype}")
    if m.shape != (V,):
        raise ValueError(f"{name}: expected shape ({V},), one entry per draft token, got shape {m.shape}")
    # In the map's own dtype before any cast (a uint64 offset must not wrap to a negative one):
    # every target id i + d2t[i] (or token_map[i]) lies in [0, vocab_size) only if the entry lies
    # in [-V, vocab_size).
    lo = -V if name == "d2t" else 0
    wild = (m < lo) | (m >= vocab_size)
    if not wild.any():
        ids = int_array(name, m) + (np.arange(V, dtype=np.int64) if name == "d2t" else 0)
        wild = (ids < 0) | (ids >= vocab_size)
    if wild.any():
        i = int(np.argmax(wild))
        target = int(m[i]) + (i if name == "d2t" else 0)  # Python ints: exact
        raise ValueError(f"{name}: draft token {i} maps to target id {target}, outside [0, {vocab_size})")
    uniq, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        t = int(uniq[np.argmax(counts > 1)])
        raise ValueError(
            f"{name}: target id {t} is the image of {int(counts.max())} draft tokens; ids must be distinct"
        )
    return ids, vocab_size


def _softmax(z: NDArray[np.float64]) -> NDArray[np.float64]:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    out: NDArray[np.float64] = e / e.sum(axis=1, keepdims=True)
    return out


def _min_p(z: NDArray[np.float64], min_p: float) -> None:
    """Mask tokens whose probability is below min_p times the largest one (in place)."""
    probs = _softmax(z)
    z[probs < probs.max(axis=1, keepdims=True) * min_p] = -np.inf


def _top_k(z: NDArray[np.float64], k: int) -> None:
    """Mask logits below the k-th largest (ties with it stay), in place."""
    V = z.shape[1]
    kth = np.sort(z, axis=1)[:, V - min(k, V)]
    z[z < kth[:, None]] = -np.inf


def _top_p(z: NDArray[np.float64], top_p: float, keep: int) -> None:
    """vLLM / HF nucleus on an ascending sort (stable: ties in id order), in place: drop a token
    when the mass up to and including it is <= 1 - top_p; the ``keep`` most probable stay."""
    order = np.argsort(z, axis=1, kind="stable")
    cum = np.cumsum(_softmax(np.take_along_axis(z, order, axis=1)), axis=1)
    drop = cum <= 1.0 - top_p
    drop[:, max(z.shape[1] - keep, 0) :] = False
    np.put_along_axis(z, order, np.where(drop, -np.inf, np.take_along_axis(z, order, axis=1)), axis=1)


def _sglang(z: NDArray[np.float64], k: int | None, top_p: float | None, min_p: float | None) -> NDArray[np.float64]:
    """SGLang's joint rule: all three filters read off one descending sort of the full distribution."""
    probs = _softmax(z)
    order = np.argsort(-probs, axis=1, kind="stable")  # descending, ties to the lower id
    ps = np.take_along_axis(probs, order, axis=1)
    keep = np.ones_like(ps, dtype=bool)
    if k is not None:
        keep[:, k:] = False
    if top_p is not None:
        keep &= (np.cumsum(ps, axis=1) - ps) <= top_p
    if min_p is not None:
        keep &= ps >= ps[:, :1] * min_p
    kept = np.zeros_like(probs)
    np.put_along_axis(kept, order, np.where(keep, ps, 0.0), axis=1)
    out: NDArray[np.float64] = kept / kept.sum(axis=1, keepdims=True)
    return out


@dataclass(frozen=True, eq=False)
class Logits:
    """Logits plus the sampling settings of an engine: the distribution that engine samples from.

    Pass it wherever the package takes ``p`` or ``q`` (``optimal_acceptance``, ``solve_lp``,
    ``acceptance``, ``simulate``, ``verify``, ``route_report``): it is
    converted to :meth:`probabilities` on the way in. Settings are checked when it is built.

    Parameters
    ----------
    values : logits, (V,) or (B, V), float32 or float64 (computed in float64). -inf marks a
        masked token; NaN and +inf are refused, as is a row with no finite logit.
    temperature : >= 0. Below ``GREEDY_BELOW[engine]`` (0 for "hf") the distribution is greedy:
        one-hot at the largest logit, ties to the lower token id.
    top_k : None (off) or an integer >= 1 (k >= V keeps everything).
    top_p : None (off) or a real in (0, 1]; 1 is off.
    min_p : None (off) or a real in [0, 1]; 0 is off.
    d2t : EAGLE-3 draft-to-target offsets, integer (V,): draft token i is target ``i + d2t[i]``.
    token_map : the same map as absolute target ids (``token_map[i] = i + d2t[i]``).
    vocab_size : the target vocabulary size; required with ``d2t`` / ``token_map``.
    engine : "vllm" (default), "sglang" or "hf": whose order and tie rules apply.
    min_tokens_to_keep : HF's floor on the tokens top-k, top-p and min-p keep (engine "hf" only).
    """

    values: ArrayLike
    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None
    d2t: ArrayLike | None = None
    token_map: ArrayLike | None = None
    vocab_size: int | None = None
    engine: Engine = DEFAULT_ENGINE
    min_tokens_to_keep: int = 1
    _rows: NDArray[np.float64] = field(init=False, repr=False)
    _ids: NDArray[np.int64] | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.engine, str) or self.engine not in ENGINES:
            raise ValueError(f"engine: expected one of {', '.join(map(repr, ENGINES))}, got {self.engine!r}")
        t = _real("temperature", self.temperature)
        if not (0.0 <= t < math.inf):
            raise ValueError(f"temperature: expected a finite value >= 0 (0 = greedy), got {self.temperature!r}")
        if self.top_k is not None and _integer("top_k", self.top_k) < 1:
            raise ValueError(f"top_k: expected an integer >= 1 or None (off), got {self.top_k!r}")
        if self.top_p is not None and not 0.0 < _real("top_p", self.top_p) <= 1.0:
            raise ValueError(f"top_p: expected 0 < top_p <= 1 or None (off), got {self.top_p!r}")
        if self.min_p is not None and not 0.0 <= _real("min_p", self.min_p) <= 1.0:
            raise ValueError(f"min_p: expected 0 <= min_p <= 1 or None (off), got {self.min_p!r}")
        if _integer("min_tokens_to_keep", self.min_tokens_to_keep) < 1:
            raise ValueError(f"min_tokens_to_keep: expected an integer >= 1, got {self.min_tokens_to_keep!r}")
        if self.min_tokens_to_keep != 1 and self.engine != "hf":
            raise ValueError(f"min_tokens_to_keep: only engine 'hf' has this setting (engine {self.engine!r} keeps 1)")
        rows = _logit_rows(self.values)
        ids, _ = _target_ids(self.d2t, self.token_map, self.vocab_size, rows.shape[1])
        object.__setattr__(self, "_rows", rows)
        object.__setattr__(self, "_ids", ids)

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of :meth:`probabilities`: (V,) or (B, V), V the target vocabulary."""
        V = self._rows.shape[1] if self.vocab_size is None else int(self.vocab_size)
        return (V,) if np.ndim(self.values) == 1 else (self._rows.shape[0], V)

    def probabilities(self) -> NDArray[np.float64]:
        """The distribution the engine samples from, float64 of :attr:`shape`, rows summing to 1."""
        z = self._rows
        if self._ids is not None:  # draft vocabulary -> target vocabulary, -inf elsewhere
            B, V = z.shape[0], self.shape[-1]
            # the mapped rows and the working copies of the filters and the softmax
            check_alloc("vocab_size", nbytes(B, V, copies=4), f"the distribution on the ({B}, {V}) target vocabulary")
            mapped = np.full((z.shape[0], self.shape[-1]), -np.inf)
            mapped[:, self._ids] = z
            z = mapped
        out = _constrained(z, self)
        return out.reshape(self.shape)

    def __array__(self, dtype: Any = None, copy: Any = None) -> NDArray[Any]:
        """NumPy sees the distribution (so a Logits is also an ArrayLike for type checkers)."""
        p = self.probabilities()
        return p if dtype is None else p.astype(dtype)


def _scaled(z: NDArray[np.float64], t: float) -> NDArray[np.float64]:
    """z / t; a row where finite logits overflow there is (z - its max) / t instead: every filter
    and the softmax read logits only up to a shift, and shifted logits cannot overflow upwards."""
    with np.errstate(over="ignore"):
        out = z / t
    hit = (np.isinf(out) & np.isfinite(z)).any(axis=1)
    if hit.any():
        with np.errstate(over="ignore"):
            out[hit] = (z[hit] - z[hit].max(axis=1, keepdims=True)) / t
    return out


def _constrained(z: NDArray[np.float64], s: Logits) -> NDArray[np.float64]:
    """Rows of z (B, V), which stay unchanged: temperature, then the engine's filters (on the
    scaled copy, in place), then softmax."""
    t = float(s.temperature)
    if t == 0.0 or t < GREEDY_BELOW[s.engine]:
        out = np.zeros_like(z)
        out[np.arange(z.shape[0]), np.argmax(z, axis=1)] = 1.0  # argmax: the first (lowest) id of ties
        return out
    z = _scaled(z, t)
    k = None if s.top_k is None else int(s.top_k)
    top_p = None if s.top_p is None or float(s.top_p) == 1.0 else float(s.top_p)
    min_p = None if s.min_p is None or float(s.min_p) == 0.0 else float(s.min_p)
    if k is None and top_p is None and min_p is None:
        return _softmax(z)  # every engine skips the filters then (SGLang's "simple sampling case")
    if s.engine == "sglang":
        return _sglang(z, k, top_p, min_p)
    keep = int(s.min_tokens_to_keep)
    if s.engine == "vllm" and min_p is not None:
        _min_p(z, min_p)
    if k is not None:
        _top_k(z, max(k, keep))
    if top_p is not None:
        _top_p(z, top_p, keep)
    if s.engine == "hf" and min_p is not None:
        _hf_min_p(z, min_p, keep)
    return _softmax(z)


def _hf_min_p(z: NDArray[np.float64], min_p: float, keep: int) -> None:
    """HF's MinPLogitsWarper: min-p, but the ``keep`` most probable tokens always stay (in place)."""
    if keep == 1:
        _min_p(z, min_p)  # the most probable token always passes min-p
        return
    probs = _softmax(z)
    drop = probs < probs.max(axis=1, keepdims=True) * min_p
    top = np.argsort(-probs, axis=1, kind="stable")[:, : min(keep, z.shape[1])]
    np.put_along_axis(drop, top, False, axis=1)
    z[drop] = -np.inf


def probabilities(values: ArrayLike, **settings: Any) -> NDArray[np.float64]:
    """``Logits(values, **settings).probabilities()``: the distribution an engine samples from."""
    return Logits(values, **settings).probabilities()


def pair(
    target: ArrayLike,
    draft: ArrayLike,
    *,
    d2t: ArrayLike | None = None,
    token_map: ArrayLike | None = None,
    **settings: Any,
) -> tuple[Logits, Logits]:
    """(p, q) as two :class:`Logits` under the SAME sampling settings (temperature, top_k, top_p,
    min_p, engine, min_tokens_to_keep); ``d2t`` / ``token_map`` map the draft's vocabulary into
    the target's, whose size is read off ``target``."""
    p = Logits(target, **settings)
    vocab = p.shape[-1] if d2t is not None or token_map is not None else None
    return p, Logits(draft, d2t=d2t, token_map=token_map, vocab_size=vocab, **settings)
