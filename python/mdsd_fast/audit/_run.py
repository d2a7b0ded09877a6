"""Running an audit: draw drafts, call the verifier, test every case, correct for multiplicity."""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..bound.lp import solve_lp
from ..inputs.args import check_alloc, nbytes
from ..inputs.pairs import as_distribution
from ..inputs.rules import check_bool, check_n
from ._result import AuditResult, CaseResult
from ._stats import LawTest, acceptance_pvalue, holm, law_test, mean_pvalue
from ._suite import AuditCase, builtin_cases, draft_scheme, real_cases, unsupported

#: verify(p, q, drafts, rng) -> token, the contract for one position.
Verify = Callable[[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64], np.random.Generator], Any]
#: draft(q, n, rng) -> n token ids, a user's own drafter.
Draft = Callable[[NDArray[np.float64], int, np.random.Generator], ArrayLike]

#: Samples per case by default: a TV of about 0.02 from p is detected on the small cases (docs/guide/audit.md).
DEFAULT_SAMPLES = 20_000
#: Family-wise false-alarm rate of a whole audit by default.
DEFAULT_ALPHA = 1e-3
#: Slack on the bound for alpha*'s own rounding (it is exact to ~1e-12; one SE is ~3e-3).
BOUND_TOL = 1e-9


class AuditError(ValueError):
    """The verifier or drafter under audit misbehaved (raised, or returned something that is not a
    token id in range); the message names the case and the call."""


@dataclass(frozen=True)
class _Draws:
    drafts: NDArray[np.int64]  # (samples, n), read-only
    tokens: NDArray[np.int64]  # (samples,)


def _readonly(a: NDArray[Any]) -> NDArray[Any]:
    a.flags.writeable = False  # a verifier that writes into its inputs fails loudly, not silently
    return a


def _case_list(cases: Iterable[Any] | None, real: int) -> list[AuditCase]:
    if cases is None:
        return builtin_cases() + (real_cases(real) if real else [])
    out = []
    for i, c in enumerate(cases):
        if isinstance(c, AuditCase):
            name, p, q, desc, fam = c.name, c.p, c.q, c.description, c.families
        elif isinstance(c, Sequence) and not isinstance(c, str) and len(c) == 2:
            name, (p, q), desc, fam = f"case-{i}", c, "", ()
        else:
            raise TypeError(f"cases[{i}]: expected an AuditCase or a (p, q) pair, got {type(c).__name__}")
        pa = as_distribution(f"cases[{i}].p", p, ndim=(1,))
        qa = as_distribution(f"cases[{i}].q", q, ndim=(1,))
        if pa.size != qa.size:
            raise ValueError(f"cases[{i}]: p has V = {pa.size} tokens, q has V = {qa.size}")
        out.append(AuditCase(name, pa, qa, desc, fam))
    if not out:
        raise ValueError("cases: no cases to audit")
    return out


def _token_ids(
    values: Sequence[Any] | NDArray[Any], V: int, what: str, case: str, shape: tuple[int, ...]
) -> NDArray[np.int64]:
    """The callable's return values as int64 ids in [0, V), or an AuditError naming the first bad one."""
    try:
        arr = np.asarray(values) if len(values) else np.zeros(shape, dtype=np.int64)
    except ValueError:  # values of different shapes: the loop below names the first odd one
        arr = np.zeros(0)
    # numpy turns a list mixing ints and bools into ints: a bool is refused explicitly
    has_bool = isinstance(values, list) and any(isinstance(v, (bool, np.bool_)) for v in values)
    if arr.dtype.kind not in "iu" or arr.shape != shape or has_bool:
        parts = []
        for k, v in enumerate(values):
            a = np.asarray(v)
            if a.dtype.kind not in "iu" or a.shape != shape[1:]:
                want = "an int token id" if len(shape) == 1 else f"{shape[1]} int token ids"
                raise AuditError(
                    f"{what} returned {v!r} ({type(v).__name__}) on case {case!r} (call {k + 1}); expected {want}"
                )
            parts.append(_in_range(a, v, V, what, case, k))
        if len(parts) != shape[0]:
            raise AuditError(f"{what} returned {len(parts)} values on case {case!r}; expected {shape[0]}")
        # every value is integers of the right shape: numpy had promoted a mix of integer types
        return np.array(parts, dtype=np.int64).reshape(shape)
    bad = np.flatnonzero(((arr < 0) | (arr >= V)).reshape(len(values), -1).any(axis=1))
    if bad.size:
        k = int(bad[0])
        raise AuditError(f"{what} returned {values[k]!r} on case {case!r} (call {k + 1}): token ids are in [0, {V})")
    return arr.astype(np.int64)


def _in_range(a: NDArray[Any], v: Any, V: int, what: str, case: str, k: int) -> NDArray[np.int64]:
    """One returned value's ids, checked in their own integer type before the cast."""
    if ((a < 0) | (a >= V)).any():
        raise AuditError(f"{what} returned {v!r} on case {case!r} (call {k + 1}): token ids are in [0, {V})")
    return a.astype(np.int64)


def _call_each(fn: Callable[..., Any], args: Sequence[Any], rows: Iterable[Any], what: str, case: str) -> list[Any]:
    out: list[Any] = []
    append = out.append
    try:
        for r in rows:
            append(fn(*args, *r))
    except Exception as exc:  # any user error; KeyboardInterrupt passes through
        raise AuditError(f"{what} raised {type(exc).__name__}: {exc} on case {case!r} (call {len(out) + 1})") from exc
    return out


def _draw(
    case: AuditCase, scheme: str, n: int, samples: int, draft: Draft | None, root: int, index: int
) -> NDArray[np.int64]:
    if draft is None:
        seed = int(np.random.SeedSequence([root, index, 0]).generate_state(1, np.uint64)[0])
        return np.ascontiguousarray(draft_scheme(scheme).draw(case.p, case.q, n, samples, seed), dtype=np.int64)
    g = np.random.default_rng([root, index, 0])
    q = _readonly(case.q.copy())
    raw = _call_each(draft, (q, n, g), ((),) * samples, "draft", case.name)
    return _token_ids(raw, case.V, "draft", case.name, (samples, n))


def _run_case(
    verify: Any, batch: Callable[..., Any] | None, case: AuditCase, drafts: NDArray[np.int64], root: int, index: int
) -> _Draws:
    p, q = _readonly(case.p.copy()), _readonly(case.q.copy())
    drafts = _readonly(drafts)
    g = np.random.default_rng([root, index, 1])
    S = drafts.shape[0]
    if batch is not None:
        try:
            out = batch(p, q, drafts, g)
        except Exception as exc:
            raise AuditError(f"verify_batch raised {type(exc).__name__}: {exc} on case {case.name!r}") from exc
        arr = np.asarray(out)
        if arr.dtype.kind not in "iu" or arr.shape != (S,):
            raise AuditError(
                f"verify_batch returned {arr.dtype} values of shape {arr.shape} on case {case.name!r}; "
                f"expected {S} int token ids"
            )
        tokens = _token_ids(arr, case.V, "verify_batch", case.name, (S,))
    else:
        raw = _call_each(verify, (p, q), ((d, g) for d in drafts), "verify", case.name)
        tokens = _token_ids(raw, case.V, "verify", case.name, (S,))
    return _Draws(drafts, tokens)


@dataclass(frozen=True)
class _Acceptance:
    rate: float
    se: float
    alpha_star: float
    bound: float
    z: float
    pvalue: float


def _acceptance_named(case: AuditCase, scheme: str, n: int, accepted: NDArray[np.bool_]) -> _Acceptance:
    S, k = accepted.size, int(accepted.sum())
    rate = k / S
    se = math.sqrt(rate * (1.0 - rate) / S)
    a = draft_scheme(scheme).bound(case.p, case.q, n)
    z = (rate - a) / se if se > 0 else (math.inf if rate > a + BOUND_TOL else 0.0)
    return _Acceptance(rate, se, a, a, z, acceptance_pvalue(k, S, a + BOUND_TOL))


def _acceptance_split(case: AuditCase, n: int, d: _Draws, accepted: NDArray[np.bool_]) -> _Acceptance:
    """Custom drafter: a certificate H from the first half's empirical set law, then on the second
    half the dual inequality Pr[Y in S] + Pr[S inside H] <= 1 + p(H), true for every H."""
    S = accepted.size
    half = S // 2
    tuples, counts = np.unique(np.sort(d.drafts[:half], axis=1), axis=0, return_counts=True)
    lp = solve_lp(case.p, None, n, "explicit", tuples=tuples, probs=counts / half, solver="flow")
    inside = np.isin(d.drafts[half:], lp.certificate).all(axis=1)
    pH = float(case.p[lp.certificate].sum())
    stat = accepted[half:].astype(np.float64) + inside
    mean, se_stat, pvalue = mean_pvalue(stat, 1.0 + pH)
    rate = float(accepted.mean())
    se = math.sqrt(rate * (1.0 - rate) / S)
    excess = mean - 1.0 - pH
    z = excess / se_stat if se_stat > 0 else (math.inf if excess > BOUND_TOL else 0.0)
    return _Acceptance(rate, se, float(lp.alpha), 1.0 + pH - float(inside.mean()), z, pvalue)


def _check_options(scheme: Any, n: Any, samples: Any, alpha: Any, draft: Any, verify: Any) -> tuple[int, int, float]:
    if not callable(verify):
        raise TypeError(f"verify: expected a callable verify(p, q, drafts, rng) -> int, got {type(verify).__name__}")
    if draft is not None and not callable(draft):
        raise TypeError(f"draft: expected a callable draft(q, n, rng) or None, got {type(draft).__name__}")
    n = check_n(n)
    if draft is None:
        lo, hi = draft_scheme(scheme).n_range
        if not lo <= n <= hi:
            raise ValueError(f"n: scheme {scheme!r} drafts {lo} <= n <= {hi} tokens, got n = {n}")
    if samples is None:
        samples = DEFAULT_SAMPLES
    if isinstance(samples, (bool, np.bool_)) or not isinstance(samples, numbers.Integral):
        raise TypeError(f"samples: expected an integer, got {type(samples).__name__}")
    count = int(samples)
    if not 100 <= count <= 10**8:
        raise ValueError(f"samples: expected 100 <= samples <= 1e8 per case, got {samples}")
    # the drafts (samples, n), the tokens and the verifier's returns, with their copies
    check_alloc("samples", nbytes(count, n + 2, copies=3), f"{count:,} audited samples of {n} drafts per case")
    if isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, numbers.Real) or not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha: expected a false-alarm rate in (0, 1), got {alpha!r}")
    return n, count, float(alpha)


def _check_real(real: Any, cases: Any) -> int:
    if isinstance(real, (bool, np.bool_)) or not isinstance(real, numbers.Integral) or int(real) < 0:
        raise ValueError(f"real: expected a number of shipped dataset rows >= 0, got {real!r}")
    if real and cases is not None:
        raise ValueError("real: adds shipped rows to the built-in suite; with cases=, pass those rows as cases")
    return int(real)


def run_audit(
    verify: Verify,
    scheme: str = "iid",
    n: int = 2,
    *,
    draft: Draft | None = None,
    cases: Iterable[Any] | None = None,
    samples: int | None = None,
    rng: Any = None,
    alpha: float = DEFAULT_ALPHA,
    batched: bool = False,
    real: int = 0,
) -> AuditResult:
    """See :func:`mdsd_fast.audit` (the documented entry point)."""
    t0 = time.perf_counter()
    n, samples, alpha = _check_options(scheme, n, samples, alpha, draft, verify)
    batched = check_bool("batched", batched)
    real = _check_real(real, cases)
    batch: Callable[..., Any] | None = verify if batched else getattr(verify, "verify_batch", None)
    try:
        root = int(np.random.default_rng(rng).integers(0, 2**63))
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"rng: expected anything numpy.random.default_rng accepts, got {rng!r} ({exc})") from None
    builtin = cases is None
    todo, skipped = [], []
    for c in _case_list(cases, real):
        short = unsupported(scheme, c.q, n) if draft is None else None
        if short is not None:
            why = f"{c.name}: {short}"
            if not builtin:
                raise ValueError(f"cases: {why}")
            skipped.append(why)
            continue
        todo.append(c)
    # Two tests per case, Holm over all of them; the power is stated at the Bonferroni level.
    level = alpha / (2 * len(todo))
    laws: list[LawTest] = []
    accs: list[_Acceptance] = []
    for i, c in enumerate(todo):
        drafts = _draw(c, scheme, n, samples, draft, root, i)
        d = _run_case(verify, batch, c, drafts, root, i)
        accepted = (d.drafts == d.tokens[:, None]).any(axis=1)
        laws.append(law_test(c.p, np.bincount(d.tokens, minlength=c.V), level))
        accs.append(
            _acceptance_named(c, scheme, n, accepted) if draft is None else _acceptance_split(c, n, d, accepted)
        )
    adjusted = holm(np.array([t.pvalue for t in laws] + [a.pvalue for a in accs]))
    results = []
    for i, (c, law, acc) in enumerate(zip(todo, laws, accs, strict=True)):
        pl, pa = float(adjusted[i]), float(adjusted[len(todo) + i])
        reasons = []
        if law.impossible:
            reasons.append(f"{law.impossible} outputs on tokens with p = 0 (each proves a bug)")
        elif pl <= alpha:
            reasons.append(
                f"output law differs from p (chi-square {law.statistic:.1f}, df {law.df}, Holm p = {pl:.2g})"
            )
        if pa <= alpha:
            reasons.append(
                f"acceptance {acc.rate:.4f} is above the bound {acc.bound:.4f} of any lossless verifier "
                f"(z = {acc.z:.1f}, Holm p = {pa:.2g}): proves a bug"
            )
        bound_test = "exact binomial test against alpha*" if draft is None else "split-half certificate bound"
        results.append(
            CaseResult(
                name=c.name,
                description=c.description,
                V=c.V,
                n=n,
                scheme=scheme if draft is None else "custom",
                samples=samples,
                verdict="FAIL" if reasons else "pass",
                reasons=tuple(reasons),
                test=f"Pearson chi-square over {law.df + 1} bins; acceptance: {bound_test}",
                statistic=law.statistic,
                bins=law.df + 1,
                df=law.df,
                pvalue=law.pvalue,
                pvalue_adjusted=pl,
                impossible=law.impossible,
                tv=law.tv,
                tv_ci=law.tv_ci,
                tv_detectable=law.tv_detectable,
                pooled_mass=law.pooled_mass,
                acceptance=acc.rate,
                acceptance_se=acc.se,
                alpha_star=acc.alpha_star,
                acceptance_bound=acc.bound,
                acceptance_z=acc.z,
                acceptance_pvalue=acc.pvalue,
                acceptance_pvalue_adjusted=pa,
            )
        )
    return AuditResult(
        lossless=all(r.passed for r in results),
        cases=tuple(results),
        scheme=scheme if draft is None else "custom",
        n=n,
        samples=samples,
        alpha=alpha,
        seed=root,
        skipped=tuple(skipped),
        seconds=time.perf_counter() - t0,
    )
