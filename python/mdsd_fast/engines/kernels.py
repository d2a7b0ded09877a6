"""Reference kernels in the inference engines' own tensor contracts, with explicit uniforms.

An engine port (CUDA, ROCm, NPU, TPU, Metal) of a speculative-decoding verifier can be diffed
token for token against these CPU kernels: every random number is an argument, so the outputs
are a deterministic function of the inputs (docs/guide/engines.md has the contracts, the layouts, the
edge cases and where an engine's float32 arithmetic can differ).

rejection_sample(...)
    vLLM V1's ``rejection_sample`` (vllm/v1/sample/rejection_sampler.py): chains of drafts per
    request, flattened, output ``[B, max_spec_len + 1]`` with -1 placeholders.
tree_speculative_sampling(...)
    SGLang's ``tree_speculative_sampling_target_only`` (sgl-kernel) token-tree contract, with
    SGLang's own rule (``verifier="sglang"``) or any verifier of the package's registry applied
    at every node.

NumPy arrays or CPU torch tensors go in; the outputs are int32 NumPy arrays, or int32 torch
tensors when any input is a torch tensor (torch is never imported by this module). Probabilities
may be float32 or float64: the C++ kernels read them in place (a torch tensor through its NumPy
view, rows contiguous and evenly spaced; other layouts are copied once) and compute in float64,
so float32 input gives the bits of its float64 conversion. They are used as given (not
renormalised: an engine does not renormalise either) and validated in the kernels' own pass. The
C++ loops run without the GIL, requests split over threads; results do not depend on the thread
count.
"""

from __future__ import annotations

import numbers
import sys
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from .. import _core
from ..inputs.args import _work_budget
from ..inputs.rules import MAX_V, SUM_TOL, as_array, check_threads
from ..limits import LIMITS
from ..verifiers.registry import verifiers

__all__ = ["rejection_sample", "tree_speculative_sampling", "TreeVerification", "TREE_VERIFIERS"]

#: What ``tree_speculative_sampling(verifier=...)`` accepts: SGLang's rule (as of SGLang PR #35798),
#: SGLang's rule before that PR, and the registry verifiers that need no solver ("optimal-lp" needs
#: an LP per node and is not served).
TREE_VERIFIERS: tuple[str, ...] = (
    "sglang",
    "sglang-pre-35798",
    *(name for name in verifiers if name != "optimal-lp"),
)


class TreeVerification(NamedTuple):
    """Output of :func:`tree_speculative_sampling`, in SGLang's layout (int32)."""

    predicts: Any  #: (B * N,), indexed by retrive_index: the token after each accepted node; -1 elsewhere
    accept_index: Any  #: (B, num_speculative_tokens): retrive_index of the root and accepted nodes; -1 after
    accept_token_num: Any  #: (B,): accepted nodes per request, the root not counted


_I64_MAX = int(np.iinfo(np.int64).max)
_MOST_TOKENS = LIMITS["max_alloc_bytes"] // 4  # int32 entries of an output within the limit


def _any_torch(*xs: Any) -> bool:
    torch = sys.modules.get("torch")  # a tensor implies torch is imported: never import it here
    if torch is not None:
        tensor, plain = torch.Tensor, np.ndarray
        for x in xs:
            if x is not None and type(x) is not plain and isinstance(x, tensor):
                return True
    return False


def _numpy(name: str, x: Any) -> NDArray[Any]:
    """A NumPy view of an array-like or a CPU torch tensor (its memory, not a copy)."""
    if isinstance(x, np.ndarray):
        return x
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        if x.device.type != "cpu":
            raise ValueError(f"{name}: expected a CPU tensor, got one on {x.device}; move it with .cpu()")
        try:
            view: NDArray[Any] = x.detach().numpy()
        except TypeError as exc:  # bfloat16 and other dtypes NumPy lacks
            raise TypeError(f"{name}: unsupported tensor dtype {x.dtype} ({exc})") from None
        return view
    return as_array(name, x)


def _ids(name: str, x: Any, shape: tuple[int, ...], lo: int, hi: int, alt: tuple[int, ...] = ()) -> NDArray[Any]:
    """Integer ids of a given shape (or ``alt``), as given (no copy). The kernels check that each lies
    in [lo, hi), on its int64 value; a uint64 above int64's range (which the cast would wrap) is
    refused here, in its own dtype."""
    arr = x if type(x) is np.ndarray else _numpy(name, x)
    if arr.dtype.kind not in "iu":  # bools are kind "b"
        if arr.size or not isinstance(x, (list, tuple)):
            raise TypeError(f"{name}: expected integer ids, got dtype {arr.dtype}")
        arr = arr.astype(np.int64)  # np.asarray([]) is float64
    if arr.shape != shape and (not alt or arr.shape != alt):
        raise ValueError(f"{name}: expected shape {f'{alt} or {shape}' if alt else shape}, got {arr.shape}")
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and arr.size and arr.max() > _I64_MAX:
        bad = arr[(arr < lo) | (arr >= hi)].flat[0]
        raise ValueError(f"{name}: id {int(bad)} outside [{lo}, {hi})")
    return arr


def _float_dtype(name: str, x: Any) -> NDArray[Any]:
    arr = x if type(x) is np.ndarray else _numpy(name, x)
    if arr.dtype.char not in "fd":  # float32, float64, either byte order
        raise TypeError(f"{name}: expected float32 or float64 values, got dtype {arr.dtype}")
    return arr


def _floats(name: str, x: Any, shape: tuple[int, ...]) -> NDArray[Any]:
    """A float32 or float64 array of the given shape, as given (no copy: the kernels read it in place
    and check its values in their own pass)."""
    arr = _float_dtype(name, x)
    if arr.shape != shape:
        raise ValueError(f"{name}: expected shape {shape}, got {arr.shape}")
    return arr


def _probs(name: str, x: Any, ndim: int, spelled: str) -> NDArray[Any]:
    """Probability rows along the last axis, float32 or float64 as given; the kernels check that
    they are finite and non-negative and that each sums to 1 within SUM_TOL, in their own pass."""
    out = _float_dtype(name, x)
    if out.ndim != ndim:
        raise ValueError(f"{name}: expected shape {spelled}, got {out.shape}")
    if not 1 <= out.shape[-1] <= MAX_V:
        raise ValueError(f"{name}: V = {out.shape[-1]} tokens; expected 1 <= V <= {MAX_V} (int32 token ids)")
    return out


def _same_dtype(tp: NDArray[Any], dp: NDArray[Any] | None) -> tuple[NDArray[Any], NDArray[Any] | None]:
    """One dtype for the target and draft rows (the kernels take one): float64 when they differ."""
    if dp is None or dp.dtype == tp.dtype:
        return tp, dp
    return tp.astype(np.float64), dp.astype(np.float64)


def _counts(x: Any, T: int) -> tuple[NDArray[np.int64], int]:
    """num_draft_tokens as int64, each count in [0, T] and the counts summing to T, and the largest
    count. A list of plain ints is read in one compiled pass; anything else through NumPy, each
    count read in its own dtype (a uint64 2**64 - 1 is not -1)."""
    got = _core.engines.count_range(x) if type(x) is list else None
    if got is None:
        counts = _numpy("num_draft_tokens", x)
        if counts.ndim == 1 and counts.size == 0:
            counts = counts.astype(np.int64)  # an empty batch: np.asarray([]) is float64
        if counts.dtype.kind not in "iu" or counts.ndim != 1:
            raise TypeError(
                f"num_draft_tokens: expected a 1-D sequence of ints, got {counts.dtype} shape {counts.shape}"
            )
        if counts.dtype.kind == "u" and counts.dtype.itemsize == 8 and counts.size and counts.max() > _I64_MAX:
            got = (0, int(counts.max()), 0, counts)  # above T: refused below
        else:
            got = _core.engines.count_range(counts)
    lo, hi, total, counts = got
    if lo < 0:
        raise ValueError(f"num_draft_tokens: counts must be >= 0, got {lo}")
    if hi > T:
        raise ValueError(f"num_draft_tokens: a count of {hi} is more than the T = {T} rows")
    if total != T:
        raise ValueError(f"num_draft_tokens: the counts sum to {total}, but there are T = {T} rows")
    return counts, hi


def _output_bytes(name: str, rows: int, width: int) -> None:
    """Refuse an int32 (rows, width) output that grows with argument ``name`` beyond the limits
    table's bytes (one row counted even when there is none: the width alone is refused)."""
    size, limit = 4 * max(rows, 1) * width, LIMITS["max_alloc_bytes"]
    if size > limit:
        raise ValueError(
            f"{name}: an output of {max(rows, 1)} x {width} int32 tokens would need {size:,} bytes, "
            f"above the limit of {limit:,} (mdsd_fast.limits.LIMITS['max_alloc_bytes'])"
        )


def _count(name: str, x: Any, minimum: int) -> int:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Integral):
        raise TypeError(f"{name}: expected an integer, got {type(x).__name__}")
    if int(x) < minimum:
        raise ValueError(f"{name}: expected an integer >= {minimum}, got {x}")
    return int(x)


def _out(arr: NDArray[np.int32], as_torch: bool) -> Any:
    """The kernels' int32 output (the engines' dtype: SamplerOutput, predicts), as a torch tensor
    sharing its memory when the inputs were tensors."""
    if as_torch:
        return sys.modules["torch"].from_numpy(arr)
    return arr


def rejection_sample(
    draft_token_ids: Any,
    num_draft_tokens: Any,
    draft_probs: Any,
    target_probs: Any,
    bonus_token_ids: Any,
    *,
    uniform_probs: Any = None,
    recovery_noise: Any = None,
    is_greedy: Any = None,
    max_spec_len: int | None = None,
    cu_num_draft_tokens: Any = None,
    threads: int | None = None,
) -> Any:
    """vLLM V1's ``rejection_sample`` with its random numbers as arguments.

    Parameters
    ----------
    draft_token_ids : int (T,), the drafts of every request, concatenated; -1 is vLLM's placeholder
        (a position that must not be verified, vLLM PR #46533): always rejected, and the recovered
        token is emitted there (from max(p - q, 0), or from p for n-gram drafts).
    num_draft_tokens : B non-negative ints summing to T (0 drafts: the bonus token alone).
    draft_probs : (T, V) draft distributions at each draft position, or None for n-gram drafts
        (vLLM's ``IS_NGRAM``: q = 1 at the draft). A row of zeros is allowed (vLLM rejects there).
    target_probs : (T, V) target distributions, one row per draft position; as in vLLM the bonus
        rows are not here (vLLM samples the bonus token outside the rejection sampler).
    bonus_token_ids : int (B, 1) or (B,), the token appended when every draft is accepted.
    uniform_probs : (T,) in [0, 1), the accept tests: draft x is accepted iff q(x) > 0 and
        p(x) / q(x) >= u. Needed when a non-greedy request has drafts.
    recovery_noise : (B, V) Exp(1) noise, finite and > 0, one row per request shared by its
        positions: the recovered token is argmax_v max(p - q, 0)(v) / noise[b, v] (vLLM's
        exponential race). Needed when a non-greedy request has drafts.
    is_greedy : bool (B,) or None: temperature-0 requests (vLLM's ``temperature == 0``), verified
        by argmax of target_probs; None: none (``all_random``), all True: ``all_greedy``.
    max_spec_len : output width minus 1; default max(num_draft_tokens).
    cu_num_draft_tokens : optional (B,) inclusive prefix sums, checked against num_draft_tokens.
    threads : threads (default: all cores); results do not depend on it.

    Returns
    -------
    int32 (B, max_spec_len + 1): accepted drafts, then the recovered or bonus token, then -1.
    """
    as_torch = _any_torch(draft_token_ids, num_draft_tokens, draft_probs, target_probs, bonus_token_ids,
                          uniform_probs, recovery_noise, is_greedy, cu_num_draft_tokens)  # fmt: skip
    # Types, shapes and the counts (which fix B and T) here; the other values in the kernel, in
    # this order: cu_num_draft_tokens, draft and bonus ids, then the rows, the uniforms and the
    # noise in its own pass.
    tp = _probs("target_probs", target_probs, 2, "(T, V)")
    T, V = tp.shape
    counts, hi = _counts(num_draft_tokens, T)
    B = counts.shape[0]
    cu = None
    if cu_num_draft_tokens is not None:  # its values: the kernel's
        cu = _ids("cu_num_draft_tokens", cu_num_draft_tokens, (B,), 0, T + 1)
    width = hi if max_spec_len is None else _count("max_spec_len", max_spec_len, hi)
    if max(B, 1) * (width + 1) > _MOST_TOKENS:
        _output_bytes("max_spec_len", B, width + 1)
    drafts = _ids("draft_token_ids", draft_token_ids, (T,), -1, V)
    bonus = bonus_token_ids if type(bonus_token_ids) is np.ndarray else _numpy("bonus_token_ids", bonus_token_ids)
    bonus = _ids("bonus_token_ids", bonus, (B,), 0, V, (B, 1))
    dp = None if draft_probs is None else _floats("draft_probs", draft_probs, (T, V))
    tp, dp = _same_dtype(tp, dp)
    greedy = None
    if is_greedy is not None:
        greedy = is_greedy if type(is_greedy) is np.ndarray else _numpy("is_greedy", is_greedy)
        if greedy.dtype != np.bool_:
            raise TypeError(f"is_greedy: expected bools, got dtype {greedy.dtype}")
        if greedy.shape != (B,):
            raise ValueError(f"is_greedy: expected shape {(B,)}, got {greedy.shape}")
    # needed when a non-greedy request has drafts (the kernel says so); in [0, 1) and finite > 0
    u = None if uniform_probs is None else _floats("uniform_probs", uniform_probs, (T,))
    noise = None if recovery_noise is None else _floats("recovery_noise", recovery_noise, (B, V))
    out = _core.engines.rejection_sample(
        drafts, counts, cu, dp, tp, bonus, greedy, u, noise, width, SUM_TOL, check_threads(threads)
    )
    return _out(out, as_torch)


def _threshold(name: str, x: Any) -> float:
    if type(x) is float and 0.0 <= x <= 1.0:
        return x
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name}: expected a number in [0, 1], got {type(x).__name__}")
    if not 0.0 <= float(x) <= 1.0:
        raise ValueError(f"{name}: expected a number in [0, 1], got {x!r}")
    return float(x)


def tree_speculative_sampling(
    candidates: Any,
    retrive_next_token: Any,
    retrive_next_sibling: Any,
    target_probs: Any,
    *,
    uniform_samples: Any,
    uniform_samples_for_final_sampling: Any,
    draft_probs: Any = None,
    retrive_index: Any = None,
    num_speculative_tokens: int | None = None,
    verifier: str = "sglang",
    scheme: str | None = None,
    threshold_single: float = 1.0,
    threshold_acc: float = 1.0,
    work_budget: float | None = None,
    threads: int | None = None,
) -> TreeVerification:
    """Verify a token tree per request in SGLang's contract (``tree_speculative_sampling_target_only``).

    Parameters
    ----------
    candidates : int (B, N): node i's token; node 0 is the root (the last verified token).
    retrive_next_token, retrive_next_sibling : int (B, N): first child and next sibling of each
        node, -1 for none. Every node reachable from the root must be reached once (a tree).
    target_probs : (B, N, V): row i is the target's next-token distribution after node i; node
        i's children are verified against it.
    uniform_samples : (B, N) in [0, 1): SGLang's coin of each node (its children's test); for a
        registry verifier the seed of node i's stream (docs/guide/engines.md).
    uniform_samples_for_final_sampling : (B,) in [0, 1): the final token's inverse-CDF uniform.
    draft_probs : (B, N, V) or None. SGLang's rule: the draft rows the final residual subtracts
        (SGLang passes zeros: None); a registry verifier: q of node i's children (row i), required.
    retrive_index : int (B, N), distinct, in [0, B * N): where each node's token lands in predicts;
        default b * N + i (SGLang's).
    num_speculative_tokens : accept_index width; at most num_speculative_tokens - 1 nodes are
        accepted and the final token is then drawn from p. Default: the deepest tree's depth + 1.
    verifier : "sglang": SGLang's rule as of SGLang PR #35798 (a child is accepted when p(x) > 0 and
        (coin < A / threshold_acc or p(x) >= threshold_single); an empty residual emits the last
        rejected child with probability), thresholds rounded to float32 as SGLang takes them;
        (1, 1) is lossless. "sglang-pre-35798": the rule before that PR (coin <= A / threshold_acc,
        no p(x) > 0 test, an empty residual emits V - 1), to diff an older SGLang build. Or a
        registry verifier of ``TREE_VERIFIERS``, applied at every node with the children's tokens
        as its draft tuple (their count is its n).
    scheme : the draft scheme the children were drafted with (registry verifiers; default the
        verifier's own, ``verifiers[name].scheme``).
    work_budget : "optimal" / "sweep" with scheme "wor": the route's work per node.
    threads : threads (default: all cores); results do not depend on it.

    Returns
    -------
    TreeVerification(predicts, accept_index, accept_token_num), int32, SGLang's layout.
    """
    as_torch = _any_torch(candidates, retrive_next_token, retrive_next_sibling, target_probs, uniform_samples,
                          uniform_samples_for_final_sampling, draft_probs, retrive_index)  # fmt: skip
    if not isinstance(verifier, str) or verifier not in TREE_VERIFIERS:
        raise ValueError(f"verifier: expected one of {', '.join(map(repr, TREE_VERIFIERS))}, got {verifier!r}")
    own = verifier in ("sglang", "sglang-pre-35798")
    # Types and shapes here (attribute reads); the values in the kernel, in the order of its errors:
    # ids (candidates in [0, V), links in [-1, N), retrive_index in [0, B * N) and distinct), the
    # uniforms in [0, 1), then the tree and the rows in its own pass.
    tp = _probs("target_probs", target_probs, 3, "(B, N, V)")
    B, N, V = tp.shape
    if N == 0:
        raise ValueError("target_probs: a tree needs at least its root (N >= 1)")
    shape = (B, N)
    cand = _ids("candidates", candidates, shape, 0, V)
    nxt = _ids("retrive_next_token", retrive_next_token, shape, -1, N)
    sib = _ids("retrive_next_sibling", retrive_next_sibling, shape, -1, N)
    idx = None if retrive_index is None else _ids("retrive_index", retrive_index, shape, 0, B * N)
    coins = _floats("uniform_samples", uniform_samples, shape)
    final = _floats("uniform_samples_for_final_sampling", uniform_samples_for_final_sampling, (B,))
    dp = None if draft_probs is None else _floats("draft_probs", draft_probs, (B, N, V))
    tp, dp = _same_dtype(tp, dp)
    spec = 0 if num_speculative_tokens is None else _count("num_speculative_tokens", num_speculative_tokens, 1)
    if spec > N:
        raise ValueError(f"num_speculative_tokens: at most N = {N} (a path holds at most N - 1 nodes), got {spec}")
    th_single = _threshold("threshold_single", threshold_single)
    th_acc = _threshold("threshold_acc", threshold_acc)
    sch = ""
    if not own:
        if (th_single, th_acc) != (1.0, 1.0):
            raise ValueError("threshold_single, threshold_acc: only SGLang's rules have thresholds")
        if dp is None:
            raise ValueError(f"draft_probs: verifier {verifier!r} needs the draft distributions (B, N, V)")
        sch = verifiers[verifier].resolve_scheme(scheme)
    elif scheme is not None:
        raise ValueError(f"scheme: verifier={verifier!r} takes no draft scheme")
    budget = _work_budget(work_budget)
    predicts, accept_index, accept_num = _core.engines.tree_sample(
        cand, idx, nxt, sib, coins, final, tp, dp, spec, verifier, sch, th_single, th_acc, budget, SUM_TOL,
        check_threads(threads),
    )  # fmt: skip
    return TreeVerification(_out(predicts, as_torch), _out(accept_index, as_torch), _out(accept_num, as_torch))
