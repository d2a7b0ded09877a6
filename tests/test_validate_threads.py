"""``threads=`` reaches input validation: the entry points that take it hand it to the C++ pass
that checks and normalises dense p and q (``_core.normalize_rows``), so ``threads=1`` keeps a
call on one core from its first pass on; and the validated rows, like every result, are bit for
bit the same on 1 and 2 threads.

The first test records the ``threads`` argument of every call of the real kernel (a pass-through
that calls it); before the fix every call got 0 (all cores) and the test fails for threads = 1
and 2. The ``None -> 0`` case is its control: the recording follows the argument.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast import _core
from mdsd_fast._validate import MAX_THREADS, as_distribution

RNG = np.random.default_rng(20261202)
B, V = 8, 400
P = RNG.dirichlet(np.full(V, 0.3), size=B)
Q = RNG.dirichlet(np.full(V, 0.3), size=B)
# A logged p on 50 tokens per row (the whole mass: a sparse row, not a truncated one).
_TOP = np.sort(np.argsort(-P, axis=1)[:, :50], axis=1)
_PS = np.take_along_axis(P, _TOP, axis=1)
P_TOPK = mf.TopK(_TOP, _PS / _PS.sum(axis=1, keepdims=True), V)
# Tuples for one pair: mf.verify of a batch with one tuple per row validates inside the direct
# kernel instead, on its threads (test_direct_input.py); one pair with many tuples takes the plan.
DRAFTS = mf.simulate("optimal", P[0], Q[0], 2, B, rng=11).drafts

# Every public entry point with threads= that validates dense rows in Python.
CALLS: dict[str, Callable[[int | None], Any]] = {
    "optimal_acceptance iid": lambda t: mf.optimal_acceptance(P, Q, 3, "iid", threads=t),
    "optimal_acceptance wor": lambda t: mf.optimal_acceptance(P, Q, 3, "wor", return_certificate=True, threads=t),
    "optimal_acceptance sparse p": lambda t: mf.optimal_acceptance(P_TOPK, Q, 2, "iid", threads=t),
    "acceptance exact": lambda t: mf.acceptance("kseq", P, Q, 3, threads=t),
    "acceptance simulated": lambda t: mf.acceptance("rrs-wor", P, Q, 3, exact=False, samples=2000, rng=3, threads=t),
    "simulate": lambda t: mf.simulate("optimal", P, Q, 2, 500, rng=4, threads=t),
    "verify": lambda t: mf.verify("optimal", P[0], Q[0], DRAFTS, rng=5, threads=t),
    "route_report": lambda t: mf.route_report("sweep", P, Q, 3, threads=t),
}


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ``threads`` of every call of the real ``_core.normalize_rows`` during the test."""
    calls: list[int] = []
    real = _core.normalize_rows

    def recording(x: Any, tol: float, threads: int = 0) -> Any:
        calls.append(int(threads))
        return real(x, tol, threads)

    monkeypatch.setattr(_core, "normalize_rows", recording)
    return calls


@pytest.mark.parametrize("name", CALLS)
@pytest.mark.parametrize(("threads", "expected"), [(1, 1), (2, 2), (None, 0), (10**6, MAX_THREADS)])
def test_threads_reach_validation(name: str, threads: int | None, expected: int, seen: list[int]) -> None:
    CALLS[name](threads)
    assert seen, "no validation pass went through _core.normalize_rows"
    assert set(seen) == {expected}, seen


def _bits(x: Any) -> Any:
    """A value's exact bits (arrays with dtype and shape), through tuples, lists and dicts."""
    if isinstance(x, dict):
        return {k: _bits(v) for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        return [_bits(v) for v in x]
    a = np.asarray(x)
    return (a.dtype.str, a.shape, a.tobytes())


@pytest.mark.parametrize("name", CALLS)
def test_results_bit_identical_on_one_and_two_threads(name: str) -> None:
    assert _bits(CALLS[name](1)) == _bits(CALLS[name](2))


def test_validated_rows_and_errors_independent_of_threads() -> None:
    # row sums off 1 by up to 5e-5, so the division changes every bit pattern it touches
    x = RNG.dirichlet(np.full(2000, 0.2), size=96) * (1.0 + RNG.uniform(-5e-5, 5e-5, size=(96, 1)))
    ref = as_distribution("p", x, threads=1)
    assert not np.array_equal(ref, x)
    for t in (2, 3, 0):
        assert as_distribution("p", x, threads=t).tobytes() == ref.tobytes(), t
    bad = x.copy()
    bad[70, 5] = np.nan
    bad[37] *= 1.01  # the first broken row is the one named, whichever thread sees it first
    for t in (1, 2):
        with pytest.raises(ValueError, match=r"^p: row 37 sums to"):
            as_distribution("p", bad, threads=t)
