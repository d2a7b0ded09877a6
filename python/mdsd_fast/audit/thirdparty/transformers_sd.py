"""Hugging Face transformers' speculative-sampling step under the audit contract.

What is audited (transformers 5.24.0, ``transformers/generation/utils.py``):
``_speculative_sampling(candidate_input_ids, candidate_logits, candidate_length, new_logits,
assistant_ensemble_weight=None)``, the acceptance step ``_assisted_decoding`` runs when
``do_sample=True`` and the candidate generator returned logits. It takes q = softmax of the
candidate generator's ``candidate_logits`` and p = softmax of the target's processed
``new_logits``, accepts a draft with probability min(1, p/q) and otherwise samples from
(p - q)+ normalised. It is lossless only if q is the law the drafts were sampled from: that is
the contract between the candidate generators and this function, and what this module checks.

* :class:`SpeculativeSampling` calls the real function at one position, feeding it tensors shaped
  exactly as ``_assisted_decoding`` does (one candidate, float32 logits, a bonus-token row), with
  torch seeded from the caller's ``rng`` (the global torch RNG is restored afterwards).
* :func:`output_law`: the exact output law when drafts come from ``q_draft`` but the function is
  handed ``q_passed``, with the same edge-case semantics as the real code (tested against it).
* :func:`warped_law`: the law transformers' own sampling warpers (``TemperatureLogitsWarper``,
  ``TopKLogitsWarper``) give, applied once or ``passes`` times.
* :func:`layer_skip_assistant` and :func:`record_assisted_step`: a real assistant model and one
  real ``generate(..., assistant_model=..., do_sample=True)`` step, recording what
  ``_assisted_decoding`` hands to the function.

torch and transformers are imported only when these run (``pip install 'mdsd_fast[models]'``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...inputs.pairs import as_distribution

__all__ = [
    "DEFAULT_TOP_K",
    "RecordedStep",
    "SpeculativeSampling",
    "installed_version",
    "layer_skip_assistant",
    "output_law",
    "record_assisted_step",
    "total_variation",
    "warped_law",
]

#: ``GenerationConfig``'s global default top_k (``_get_default_generation_params``), which applies
#: when neither the model's generation config nor the user sets one (SmolLM2's does not).
DEFAULT_TOP_K = 50


def _hf() -> tuple[Any, Any]:
    """(torch, transformers.generation.utils), imported on first use."""
    try:
        import torch
        import transformers.generation.utils as gen_utils
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "mdsd_fast.audit.thirdparty.transformers_sd needs PyTorch and transformers: pip install 'mdsd_fast[models]'"
        ) from exc
    return torch, gen_utils


def installed_version() -> str:
    """The version of the transformers package that is audited."""
    import transformers

    return str(transformers.__version__)


def total_variation(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    """TV distance between two laws on the same tokens: half their L1 distance."""
    return 0.5 * float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).sum())


# ---------------------------------------------------------------------------------------------
# the exact law
def output_law(
    p: NDArray[np.float64], q_draft: NDArray[np.float64], q_passed: NDArray[np.float64]
) -> tuple[NDArray[np.float64], float]:
    """Output law of one ``_speculative_sampling`` position and its acceptance rate.

    The draft is drawn from ``q_draft``; the function is handed ``q_passed``. A draft y is kept
    with probability min(1, p(y)/q_passed(y)), as the real code's ``r <= p_i / q_i`` with r
    uniform on [0, 1): p > 0 = q_passed gives ratio inf (always kept), p = 0 = q_passed gives NaN
    (never kept). On rejection the token is drawn from (p - q_passed)+ normalised. Where a
    rejection can happen while that residual is all zero the real function would sample from
    NaNs (torch raises); that is a ``ValueError`` here. With q_draft = q_passed the law is p.
    """
    p = as_distribution("p", p, ndim=(1,))
    q_draft = as_distribution("q_draft", q_draft, ndim=(1,))
    q_passed = as_distribution("q_passed", q_passed, ndim=(1,))
    if not (p.size == q_draft.size == q_passed.size):
        raise ValueError(f"p, q_draft, q_passed: sizes {p.size}, {q_draft.size}, {q_passed.size} differ")
    keep = np.where(p > 0, 1.0, 0.0)
    pos = q_passed > 0
    keep[pos] = np.minimum(1.0, p[pos] / q_passed[pos])
    accepted = q_draft * keep
    rejected = float((q_draft * (1.0 - keep)).sum())
    residual = np.maximum(p - q_passed, 0.0)
    mass = float(residual.sum())
    if rejected > 0.0 and mass <= 0.0:
        raise ValueError("a draft can be rejected while (p - q_passed)+ is all zero: the real function samples NaNs")
    law = accepted + (rejected / mass) * residual if rejected > 0.0 else accepted
    return law, float(accepted.sum())


def warped_law(
    logits: Any, temperature: float, top_k: int | None = DEFAULT_TOP_K, *, passes: int = 1
) -> NDArray[np.float64]:
    """The sampling law transformers' warpers give: ``TemperatureLogitsWarper`` (when T != 1) then
    ``TopKLogitsWarper`` (when top_k), in generate's order, applied ``passes`` times to float32
    logits; the softmax is taken in float64. ``logits`` may be log-probabilities (any offset)."""
    torch, _ = _hf()
    from transformers.generation.logits_process import LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper

    if not temperature > 0:
        raise ValueError(f"temperature: must be > 0, got {temperature!r}")
    if passes < 1:
        raise ValueError(f"passes: must be >= 1, got {passes!r}")
    procs: list[Any] = []
    for _ in range(passes):
        if temperature != 1.0:
            procs.append(TemperatureLogitsWarper(float(temperature)))
        if top_k:
            procs.append(TopKLogitsWarper(top_k=int(top_k)))
    z = torch.as_tensor(np.asarray(logits), dtype=torch.float32).reshape(1, -1).clone()
    z = LogitsProcessorList(procs)(torch.zeros((1, 1), dtype=torch.long), z)
    out: NDArray[np.float64] = torch.softmax(z.to(torch.float64), dim=-1)[0].numpy()
    return out


# ---------------------------------------------------------------------------------------------
# the real function as a verifier
def _log32(torch: Any, x: NDArray[np.float64]) -> Any:
    with np.errstate(divide="ignore"):
        return torch.from_numpy(np.log(x)).to(torch.float32)  # log 0 = -inf: softmax gives 0 there


class SpeculativeSampling:
    """``verify(p, q, drafts, rng) -> token``: transformers' real ``_speculative_sampling`` at one
    position, for one draft (n = 1) drawn by the caller from q.

    ``passed``: the q the candidate generator hands over, if it is not the law the drafts came
    from (a fixed array of the same size); None hands over q itself, as the contract requires.
    ``compact``: call the function on the tokens where p or q is positive (drafts must be among them) plus one
    token holding the rest of ``passed``'s mass. That changes neither the law of the output nor
    the acceptance (those tokens are never drafted, have p = 0 and no residual mass) and makes a
    call ~6x cheaper at V = 49,152 (0.3 vs 1.9 ms on one core); the default False calls it on the
    full vocabulary.

    The tensors are the ones ``_assisted_decoding`` builds for a candidate of length 1:
    ``candidate_input_ids`` (1, 2) = [prefix token, draft], ``candidate_logits`` (1, 1, V) float32
    = log q, ``candidate_length`` = 1, ``new_logits`` (1, 2, V) float32 = log p at the candidate
    position and again at the bonus position (whose sample, drawn when the draft is kept, is not
    part of this position's output). torch's global RNG is seeded from ``rng`` for the call and
    restored afterwards, so a seed gives the same tokens on every run.
    """

    def __init__(self, passed: NDArray[np.float64] | None = None, *, compact: bool = False) -> None:
        self.passed = None if passed is None else as_distribution("passed", passed, ndim=(1,))
        self.compact = bool(compact)
        self.calls = 0
        self.accepted = 0
        self._cache: tuple[Any, ...] | None = None

    def _tensors(self, p: NDArray[np.float64], q: NDArray[np.float64]) -> tuple[Any, Any, NDArray[np.int64] | None]:
        """(candidate_logits, new_logits, kept token ids or None); reused while p and q are the
        same read-only arrays (an audit makes its inputs read-only)."""
        c = self._cache
        if c is not None and c[0] is p and c[1] is q:
            return c[2], c[3], c[4]
        torch, _ = _hf()
        pa = as_distribution("p", p, ndim=(1,))
        qa = as_distribution("q", q, ndim=(1,))
        passed = qa if self.passed is None else self.passed
        if not (pa.size == qa.size == passed.size):
            raise ValueError(f"p, q, passed: sizes {pa.size}, {qa.size}, {passed.size} differ")
        keep: NDArray[np.int64] | None = None
        if self.compact:
            keep = np.flatnonzero((pa > 0) | (qa > 0)).astype(np.int64)
            rest = max(0.0, 1.0 - float(passed[keep].sum()))
            pa, passed = np.append(pa[keep], 0.0), np.append(passed[keep], rest)
        cand = _log32(torch, passed).reshape(1, 1, -1)
        new = _log32(torch, pa).reshape(1, 1, -1).expand(1, 2, -1).clone()
        if not (p.flags.writeable or q.flags.writeable):
            self._cache = (p, q, cand, new, keep)
        return cand, new, keep

    def step(
        self, p: NDArray[np.float64], q: NDArray[np.float64], draft: int, rng: np.random.Generator
    ) -> tuple[int, bool]:
        """(token emitted at the position, whether the draft was kept)."""
        torch, gen_utils = _hf()
        cand, new, keep = self._tensors(p, q)
        V = int(np.asarray(p).shape[-1])
        if not 0 <= draft < V:
            raise ValueError(f"drafts: token {draft} is outside [0, {V})")
        d = draft
        if keep is not None:
            j = int(np.searchsorted(keep, draft))
            if j == keep.size or keep[j] != draft:  # compact drops tokens with p = q = 0
                raise ValueError(f"drafts: token {draft} has p = q = 0; compact=True needs drafts from q")
            d = j
        ids = torch.tensor([[0, d]], dtype=torch.long)
        seed = int(rng.integers(0, 2**63 - 1))
        with torch.random.fork_rng(devices=[]):
            torch.default_generator.manual_seed(seed)  # the CPU generator: the function samples there
            valid, n_matches = gen_utils._speculative_sampling(ids, cand, 1, new)
        tok = int(valid[0, 0])
        kept = int(n_matches) >= 1
        self.calls += 1
        self.accepted += kept
        return (int(keep[tok]) if keep is not None else tok), kept

    def __call__(
        self, p: NDArray[np.float64], q: NDArray[np.float64], drafts: NDArray[np.int64], rng: np.random.Generator
    ) -> int:
        d = np.asarray(drafts)
        if d.dtype.kind not in "iu" or d.shape != (1,):
            raise ValueError(f"drafts: transformers verifies one draft per position, got shape {d.shape} ({d.dtype})")
        return self.step(p, q, int(d[0]), rng)[0]


# ---------------------------------------------------------------------------------------------
# the real drafting path
def layer_skip_assistant(model: Any, skip: tuple[int, ...]) -> Any:
    """A separate assistant model: ``model`` with decoder layers ``skip`` removed, sharing its
    weights (what :class:`mdsd_fast.lm.LayerSkipDraft` computes, as a model ``generate`` takes)."""
    from ..._torch import decoder_layers

    assistant = copy.deepcopy(model, {id(t): t for t in model.parameters()})
    layers, path = decoder_layers(assistant)
    if any(not 0 <= i < len(layers) for i in skip) or len(set(skip)) >= len(layers):
        raise ValueError(f"skip: layer indices must be distinct, in [0, {len(layers)}), and leave a layer")
    parent = assistant
    *head, last = path.split(".")
    for part in head:
        parent = getattr(parent, part)
    torch, _ = _hf()
    parent._modules[last] = torch.nn.ModuleList([m for i, m in enumerate(layers) if i not in set(skip)])
    return assistant


@dataclass(frozen=True)
class RecordedStep:
    """What ``_assisted_decoding`` handed to ``_speculative_sampling`` in one real step."""

    draft: int  #: the candidate token the assistant sampled
    q_passed: NDArray[np.float64]  #: softmax of ``candidate_logits`` (V,)
    p: NDArray[np.float64]  #: softmax of the target's processed ``new_logits`` at the position (V,)
    token: int  #: the token the step emitted at the position
    accepted: bool


@contextmanager
def _recording(gen_utils: Any, calls: list[tuple[Any, ...]]) -> Iterator[None]:
    """Observe the real function's arguments and results while it runs (it is called as a module
    global by ``_assisted_decoding``); restored on exit."""
    real = gen_utils._speculative_sampling

    def observed(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        calls.append((args, out))
        return out

    gen_utils._speculative_sampling = observed
    try:
        yield
    finally:
        gen_utils._speculative_sampling = real


def record_assisted_step(
    target: Any, assistant: Any, input_ids: list[int], *, temperature: float, seed: int, **generate_kwargs: Any
) -> RecordedStep:
    """Run ``target.generate(..., assistant_model=assistant, do_sample=True)`` for one candidate
    token (``max_new_tokens=2`` leaves room for exactly one) and record its acceptance step."""
    torch, gen_utils = _hf()
    ids = torch.tensor([list(input_ids)], dtype=torch.long)
    calls: list[tuple[Any, ...]] = []
    with _recording(gen_utils, calls), torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(int(seed))
        target.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            assistant_model=assistant,
            do_sample=True,
            temperature=float(temperature),
            max_new_tokens=2,
            **generate_kwargs,
        )
    if not calls:
        raise RuntimeError("generate did not call _speculative_sampling (no candidate logits?)")
    (cand_ids, cand_logits, cand_len, new_logits, *_), (valid, n_matches) = calls[0]
    if int(cand_len) != 1:
        raise RuntimeError(f"expected one candidate token, got {int(cand_len)}")
    return RecordedStep(
        draft=int(cand_ids[0, -1]),
        q_passed=torch.softmax(cand_logits[0, 0].to(torch.float64), -1).numpy(),
        p=torch.softmax(new_logits[0, 0].to(torch.float64), -1).numpy(),
        token=int(valid[0, 0]),
        accepted=int(n_matches) >= 1,
    )
