"""Input rules, in one place, with the error messages users see.

Rules (applied to every probability array the package accepts):

* dtype: float32 or float64 in either byte order (or a list/tuple of Python floats); other
  dtypes (int, bool, complex, float16, longdouble, object) raise ``TypeError``. Computation is
  always in float64, on a C-contiguous copy (strided and reversed views give the same numbers).
* shape: ``(V,)`` or ``(B, V)`` with ``1 <= V <= MAX_V`` (token ids are int32 in the C++ core);
  ``B = 0`` is allowed and gives empty results. Scalars (0-d) are refused. Shapes are checked
  before anything is copied.
* flags: ``return_certificate`` and ``exact`` must be bools; ``threads`` a positive integer or
  None (more than ``MAX_THREADS`` is clamped: results never depend on it). An entry point's
  ``threads`` also covers the validation pass below.
* values: finite and non-negative; every row must have a positive sum.
* normalisation: a row whose sum is within ``SUM_TOL`` (1e-4) of 1 is divided by its sum;
  any other row is an error naming the row.
* n: a Python/NumPy integer ``>= 1`` (bool refused); schemes that draw distinct tokens
  ("wor", "greedy", "topk", "top<m>+wor") need at least n tokens with q > 0 in every row,
  "top<m>+iid" at least m + 1; mixed schemes need 1 <= m < n.
"""

from __future__ import annotations

import numbers
import operator
import re
from typing import Any, Literal, NoReturn, TypeVar, overload

import numpy as np
from numpy.typing import NDArray

from .. import limits

SUM_TOL = 1e-4
#: Largest vocabulary: token ids are int32 in the C++ core.
MAX_V = limits.MAX_VOCAB
#: Requests for more threads than this are clamped (the C++ core caps there anyway).
MAX_THREADS = limits.MAX_THREADS
#: Named draft schemes of ``optimal_acceptance``, and those ``solve_lp`` also accepts. Besides these,
#: both take the mixed schemes "top<m>+iid" and "top<m>+wor" (m >= 1; see ``mixed_parts``).
Scheme = Literal["iid", "wor", "greedy", "topk"]
LPScheme = Literal["iid", "wor", "greedy", "topk", "independent", "explicit"]
SCHEMES: tuple[Scheme, ...] = ("iid", "wor", "greedy", "topk")
LP_SCHEMES: tuple[LPScheme, ...] = ("iid", "wor", "greedy", "topk", "independent", "explicit")
#: The family names the verifier table uses for every mixed scheme.
MIXED_FAMILIES = ("top<m>+iid", "top<m>+wor")
_MIXED = re.compile(r"top([1-9][0-9]{0,5})\+(iid|wor)")

_S = TypeVar("_S", bound=str)

__all__ = [
    "SUM_TOL",
    "MAX_V",
    "MAX_THREADS",
    "SCHEMES",
    "LP_SCHEMES",
    "check_n",
    "check_scheme",
    "check_support",
    "check_bool",
    "check_threads",
    "mixed_parts",
    "scheme_family",
]


def as_array(name: str, x: Any) -> NDArray[Any]:
    """``x`` as an ndarray (no copy for arrays); a ValueError naming ``name`` if it cannot be one."""
    if isinstance(x, np.ndarray):
        return x
    try:
        return np.asarray(x)
    except Exception as exc:  # ragged lists and the like
        raise ValueError(f"{name}: cannot be read as an array ({exc})") from None


def _float_array(name: str, x: Any, ndim: tuple[int, ...]) -> NDArray[Any]:
    """``x`` as an array once its dtype and shape follow the rules (no copy, no value check)."""
    arr = as_array(name, x)
    if arr.dtype.kind != "f" or arr.dtype.itemsize not in (4, 8):
        raise TypeError(f"{name}: expected float32 or float64 probabilities, got dtype {arr.dtype}")
    if arr.ndim not in ndim:
        want = " or ".join({1: "(V,)", 2: "(B, V)"}[d] for d in ndim)
        raise ValueError(f"{name}: expected shape {want}, got shape {arr.shape}")
    if arr.shape[-1] == 0:
        raise ValueError(f"{name}: the vocabulary is empty (V = 0)")
    if arr.shape[-1] > MAX_V:
        raise ValueError(f"{name}: V = {arr.shape[-1]} tokens is more than the supported {MAX_V} (int32 token ids)")
    return arr


def _as_float_array(name: str, x: Any, ndim: tuple[int, ...]) -> NDArray[np.float64]:
    return np.ascontiguousarray(_float_array(name, x, ndim), dtype=np.float64)


def raise_row_error(name: str, status: int, r: int, value: float, rows: NDArray[Any]) -> NoReturn:
    """The ValueError for row ``r`` of ``rows`` breaking rule ``status`` (as _core.inputs.normalize_rows reports it)."""
    if status == 1:
        raise ValueError(f"{name}: row {r} contains NaN or inf")
    if status == 2:
        raise ValueError(f"{name}: row {r} has negative entries (min {rows[r].min():.3g})")
    if value <= 0:
        raise ValueError(f"{name}: row {r} sums to 0; a distribution needs positive mass")
    raise ValueError(
        f"{name}: row {r} sums to {value:.9g}, not within {SUM_TOL:g} of 1 "
        "(rows within the tolerance are renormalised; normalise the input yourself otherwise)"
    )


def check_pair_shapes(pa: NDArray[Any], qa: NDArray[Any]) -> None:
    """p and q of one vocabulary, and of one batch size when both are batches."""
    if pa.shape[-1] != qa.shape[-1]:
        raise ValueError(f"p, q: vocabulary sizes differ (p has V={pa.shape[-1]}, q has V={qa.shape[-1]})")
    if pa.ndim == 2 and qa.ndim == 2 and pa.shape[0] != qa.shape[0]:
        raise ValueError(f"p, q: batch sizes differ (p has {pa.shape[0]} rows, q has {qa.shape[0]})")


def check_n(n: Any, *, name: str = "n") -> int:
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{name}: expected an integer number of drafts, got {type(n).__name__}")
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"{name}: the number of drafts must be >= 1, got {n}")
    if n > limits.MAX_DRAFTS:
        raise ValueError(f"{name}: {n} drafts is beyond any supported computation (limit {limits.MAX_DRAFTS})")
    return n


def check_bool(name: str, value: Any) -> bool:
    """A Python or NumPy bool (truthy objects such as "no" or 1 are refused)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: expected a bool, got {type(value).__name__}")
    return bool(value)


def check_threads(threads: Any) -> int:
    """None -> 0 (all cores); a positive integer, clamped to MAX_THREADS."""
    if threads is None:
        return 0
    if isinstance(threads, (bool, np.bool_)) or not isinstance(threads, numbers.Integral) or threads < 1:
        raise ValueError(f"threads: expected a positive integer or None, got {threads!r}")
    return min(operator.index(threads), MAX_THREADS)


def mixed_parts(scheme: str) -> tuple[int, str] | None:
    """(m, "iid" | "wor") for a mixed scheme "top<m>+iid" / "top<m>+wor", None for any other string."""
    mt = _MIXED.fullmatch(scheme)
    return (int(mt.group(1)), mt.group(2)) if mt else None


def scheme_family(scheme: str) -> str:
    """The name the verifier table uses for a scheme: "top<m>+iid" for "top2+iid", the name itself otherwise."""
    mp = mixed_parts(scheme)
    return f"top<m>+{mp[1]}" if mp else scheme


@overload
def check_scheme(scheme: Any) -> str: ...
@overload
def check_scheme(scheme: Any, allowed: tuple[_S, ...], *, mixed: bool = ...) -> _S: ...
def check_scheme(scheme: Any, allowed: tuple[str, ...] = SCHEMES, *, mixed: bool = True) -> str:
    """``scheme`` itself once it is one of ``allowed`` or, with ``mixed``, a mixed scheme "top<m>+iid|wor"."""
    if isinstance(scheme, str) and (scheme in allowed or (mixed and mixed_parts(scheme) is not None)):
        return scheme
    names = ", ".join(map(repr, allowed)) + (", 'top<m>+iid', 'top<m>+wor'" if mixed else "")
    raise ValueError(f"scheme: expected one of {names}, got {scheme!r}")


def check_support(name: str, q2: NDArray[np.float64], n: int, scheme: str) -> None:
    """Schemes with deterministic or distinct drafts need enough tokens with q > 0 in every row."""
    mp = mixed_parts(scheme)
    if mp is not None and mp[0] >= n:
        raise ValueError(
            f"scheme: {scheme!r} drafts the top {mp[0]} tokens and needs n > {mp[0]}, got n = {n}"
            + (" (use 'topk' for all n deterministic)" if mp[0] == n else "")
        )
    if q2.shape[0] == 0:
        return
    if scheme in ("wor", "greedy", "topk") or (mp is not None and mp[1] == "wor"):
        need, what = n, f"draws {n} distinct tokens"
    elif mp is not None:
        need, what = mp[0] + 1, f"drafts the top {mp[0]} tokens plus draws from the rest"
    else:
        return
    support = np.count_nonzero(q2 > 0, axis=1)
    short = support < need
    if short.any():
        r = int(np.argmax(short))
        raise ValueError(
            f"n: scheme {scheme!r} {what} but {name} row {r} has only "
            f"{int(support[r])} tokens with positive probability"
        )
