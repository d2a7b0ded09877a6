"""alpha* of dense input without a validated copy of the batch (``bound._alpha_direct``,
``_core.bound.dual_direct``): each raw row is validated and normalised in its own C++ pass into the
thread's scratch, float32 kept float32 until then. Checked against the validated route
(``as_pair`` then ``_core.bound.dual_batch``, kept for sparse input and as the reference): the same
alpha* bit for bit and the same certificates, for every scheme, float32 and float64, a batch, one
row and a row broadcast against a batch, any thread count; bad input named as the validated route
names it. Negative control: rows normalised by a multiplication (1 ulp from the division) move
alpha* on some rows, so the comparison sees a 1-ulp change of the normalised rows."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import mdsd_fast as mf
from cases import bad_cases, direct_rows
from mdsd_fast import _core
from mdsd_fast.inputs.pairs import as_pair

SCHEMES = [("iid", 1), ("iid", 4), ("wor", 2), ("wor", 4), ("greedy", 3), ("topk", 3), ("top2+iid", 4), ("top1+wor", 3)]


def _validated(P: np.ndarray, Q: np.ndarray, n: int, scheme: str) -> tuple[np.ndarray, list[np.ndarray]]:
    p2, q2, _ = as_pair(P, Q)
    return _core.bound.dual_batch(p2, q2, n, scheme, "auto", True, 1)


def _message(f: Callable[[], object]) -> str:
    with pytest.raises(ValueError) as e:
        f()
    return str(e.value)


@pytest.mark.parametrize("scheme,n", SCHEMES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_equals_the_validated_route_bit_for_bit(scheme: str, n: int, dtype: type) -> None:
    P, Q = direct_rows(12, 3000, 21 + n)
    Q[3, :40] = 0.0  # zeros in q (and p's mass there): the support and the certificate skip them
    P[5, 100:140] = 0.0
    Q[3] /= Q[3].sum()
    P[5] /= P[5].sum()
    P, Q = P.astype(dtype), Q.astype(dtype)
    want, wcert = _validated(P, Q, n, scheme)
    got, gcert = mf.optimal_acceptance(P, Q, n, scheme=scheme, return_certificate=True, threads=2)
    assert np.array_equal(got, want)
    assert all(np.array_equal(a, b) for a, b in zip(gcert, wcert, strict=True))
    for r in (0, 3, 5):  # one row (1-D input)
        a, c = mf.optimal_acceptance(P[r], Q[r], n, scheme=scheme, return_certificate=True)
        assert a == want[r] and np.array_equal(c, wcert[r])
    # a row broadcast against a batch, and mixed widths (widened to float64: exact)
    b = mf.optimal_acceptance(P[2], Q.astype(np.float64), n, scheme=scheme, threads=1)
    assert np.array_equal(b, _validated(np.broadcast_to(P[2], Q.shape), Q.astype(np.float64), n, scheme)[0])


def test_threads_and_chunks_do_not_matter() -> None:
    P, Q = direct_rows(40, 2000, 8)
    a1 = mf.optimal_acceptance(P, Q, 4, threads=1)
    a2 = mf.optimal_acceptance(P, Q, 4, threads=2)
    parts = np.concatenate([mf.optimal_acceptance(P[i : i + 7], Q[i : i + 7], 4, threads=2) for i in range(0, 40, 7)])
    assert np.array_equal(a1, a2) and np.array_equal(a1, parts)


def test_a_one_ulp_change_of_the_rows_is_seen() -> None:
    """Negative control: multiplying by 1/sum instead of dividing moves some normalised entries by
    an ulp, and alpha* on some rows with them; the bit-for-bit comparison above would catch that."""
    P, Q = direct_rows(64, 3000, 3)
    want = mf.optimal_acceptance(P, Q, 4)
    Pm = P * (1.0 / P.sum(axis=1, keepdims=True))
    Qm = Q * (1.0 / Q.sum(axis=1, keepdims=True))
    moved = _core.bound.dual_batch(Pm, Qm, 4, "iid", "auto", False, 1)[0] != want
    assert moved.sum() >= 1


def test_bad_input_is_named_as_the_validated_route_names_it() -> None:
    P, Q = direct_rows(6, 500, 13)
    for Pc, Qc, want in bad_cases(P, Q):
        for scheme in ("iid", "wor"):
            got = _message(lambda Pc=Pc, Qc=Qc, s=scheme: mf.optimal_acceptance(Pc, Qc, 2, scheme=s))
            assert got.startswith(want), (got, want)
            assert got == _message(lambda Pc=Pc, Qc=Qc: as_pair(Pc, Qc))
    # too few tokens with q > 0 for the scheme: the kernel refuses the row (wor) or computes it
    # (greedy): both end in the validated route's message
    Q3 = Q.copy()
    Q3[2, 3:] = 0.0
    Q3[2] /= Q3[2].sum()
    for scheme in ("wor", "greedy", "topk", "top1+wor"):
        got = _message(lambda s=scheme: mf.optimal_acceptance(P, Q3, 4, scheme=s))
        assert "q row 2 has only 3 tokens with positive probability" in got, got
    with pytest.raises(TypeError, match="p: expected float32 or float64"):
        mf.optimal_acceptance(P.astype(np.float16), Q, 2)
    assert _message(lambda: mf.optimal_acceptance(P[:, :400], Q, 2)).startswith("p, q: vocabulary sizes differ")
