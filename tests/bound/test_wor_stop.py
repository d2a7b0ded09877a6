r"""The early stop of alpha*_wor's chord scan at n > 8 (bound/wor_stop.hpp): the same bits, less work.

At n > 8 every token joins the race one by one, so a scan that integrates up to the end of a
support of 47,000 tokens costs 64 x G multiply-adds per token. A bound on Q_wor tighter than
q(H)^n (drop the largest tokens of H: (1 - lam / q(V \ J))^(n - |J|)) stops the scan once no later
prefix can come within 1e-9 of the minimum; alpha* and its certificate keep their bits. Checked
against the same scan without the stop (``_core._testing.wor_alpha_scan(..., "nostop")``) on shipped
rows where it stops early and on adversarial rows, and against the high-accuracy reference scan.
"""

from __future__ import annotations

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast import _core

scan = _core._testing.wor_alpha_scan


@pytest.fixture(scope="module")
def flat() -> tuple[np.ndarray, np.ndarray]:
    # shipped rows whose q spreads over ~47,000 tokens (alpha*_wor ~ 1 at n = 64): the scan runs to the end
    P, Q = mf.load_dataset()[[360, 432, 468]].dense(renormalize=True)
    return P, Q


def _adversarial(seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    V, rows = 2048, []
    for kind in range(5):
        q = rng.dirichlet(np.full(V, 0.1))
        p = rng.dirichlet(np.full(V, 0.1))
        if kind == 1:  # one token holds ~all of q
            q = q * 1e-3
            q[rng.integers(V)] += 1 - 1e-3
        elif kind == 2:  # p close to q: alpha* ~ 1, ties within rounding
            p = q * np.exp(rng.normal(0, 1e-3, V))
        elif kind == 3:  # q on a third of the tokens, p also outside
            q[rng.random(V) < 2 / 3] = 0
        elif kind == 4:  # masses down to 1e-300
            q = np.exp(rng.uniform(-690, 0, V))
        rows.append((p / p.sum(), q / q.sum()))
    return rows


@pytest.mark.parametrize("n", [16, 64])
def test_stop_keeps_the_bits_and_saves_work(flat, n: int) -> None:
    P, Q = flat
    saved = 0
    for p, q in zip(P, Q, strict=True):
        a, k, ev, fb = scan(p, q, n, "chord")
        b, kb, evb, fbb = scan(p, q, n, "nostop")
        assert (a, k, fb) == (b, kb, fbb)  # bit for bit, the certificate too
        assert ev <= evb
        saved += ev < evb
        got = _core.bound.dual_batch(p[None], q[None], n, "wor", "auto", False, 1)[0]
        assert got[0] == a  # the public kernel takes the stop
    if n == 64:
        assert saved == len(P)  # the stop fires on these rows (a negative control for the comparison)


@pytest.mark.parametrize("n", [9, 12, 24, 48])
def test_stop_keeps_the_bits_on_adversarial_rows(n: int) -> None:
    for p, q in _adversarial(n):
        assert scan(p, q, n, "chord")[:2] == scan(p, q, n, "nostop")[:2]


def test_stop_agrees_with_the_reference_scan() -> None:
    for p, q in _adversarial(1)[:3]:
        a = scan(p, q, 16, "chord")[0]
        assert abs(a - scan(p, q, 16, "fine", 2)[0]) < 1e-10
