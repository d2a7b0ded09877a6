"""Thread safety: 8 Python threads calling every entry point at once give exactly the serial
results; seeded simulation is reproducible across thread counts (inner and outer)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import mdsd_fast as mf

RNG = np.random.default_rng(2024)
V = 300
P = RNG.dirichlet(np.full(V, 0.5), size=6)
Q = RNG.dirichlet(np.full(V, 0.5), size=6)
p6, q6 = RNG.dirichlet(np.ones(6)), RNG.dirichlet(np.ones(6))
TUPLES = RNG.integers(0, 6, size=(40, 3))
PROBS = RNG.dirichlet(np.ones(40))


def _calls() -> dict[str, Callable[[], Any]]:
    return {
        "alpha_iid": lambda: mf.optimal_acceptance(P, Q, 4, "iid", return_certificate=True),
        "alpha_wor": lambda: mf.optimal_acceptance(P, Q, 5, "wor"),
        "alpha_wor3": lambda: mf.optimal_acceptance(P, Q, 3, "wor", threads=2),
        "alpha_greedy": lambda: mf.optimal_acceptance(P, Q, 4, "greedy"),
        "alpha_lp": lambda: mf.optimal_acceptance(p6, q6, 3, "wor", method="lp"),
        "lp_highs": lambda: _lp(mf.solve_lp(p6, q6, 3, "iid")),
        "lp_flow": lambda: _lp(mf.solve_lp(p6, q6, 3, "wor", solver="flow")),
        "lp_explicit": lambda: _lp(mf.solve_lp(p6, None, 3, "explicit", tuples=TUPLES, probs=PROBS)),
        "lp_independent": lambda: _lp(mf.solve_lp(p6, np.stack([q6, p6]), 2, "independent")),
        "acc_exact": lambda: [
            mf.acceptance(n, P, Q, mf.verifiers[n].fixed_n or 3) for n in ("sd", "rrs", "kseq", "greedy", "spechub")
        ],
        "acc_rrs_wor": lambda: mf.acceptance("rrs-wor", p6, q6, 3),
        "acc_optimal_lp": lambda: mf.acceptance("optimal-lp", p6, q6, 3, scheme="wor"),
        "acc_estimate": lambda: mf.acceptance("rrs-wor", P, Q, 3, exact=False, samples=20_000, rng=7),
        "simulate": lambda: tuple(mf.simulate("kseq", P, Q, 3, 10_000, rng=11)),
        "simulate_lp": lambda: tuple(mf.simulate("optimal-lp", p6, q6, 2, 5000, rng=12)),
        "verify": lambda: mf.verify("greedy", P, Q, _greedy_drafts(), rng=13),
    }


def _greedy_drafts() -> np.ndarray:
    top = np.argsort(-Q, axis=1, kind="stable")
    return np.stack([top[:, 0], top[:, 1], top[:, 5]], axis=1)


def _lp(res: Any) -> tuple[Any, ...]:
    return (res.alpha, res.cut_value, res.certificate, res.flows, res.set_ptr, res.set_tokens, res.set_weights)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return a.dtype == np.asarray(b).dtype and np.array_equal(a, b)
    return bool(a == b)


def test_eight_threads_every_entry_point_identical_to_serial() -> None:
    calls = _calls()
    serial = {k: f() for k, f in calls.items()}
    n_threads, rounds = 8, 3
    barrier = threading.Barrier(n_threads)
    results: list[dict[str, Any]] = [{} for _ in range(n_threads)]
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            barrier.wait()
            names = list(calls)
            for r in range(rounds):
                # each thread walks the entry points in its own order, so different calls overlap
                order = names[i % len(names) :] + names[: i % len(names)]
                for k in order if r % 2 == 0 else order[::-1]:
                    out = calls[k]()
                    prev = results[i].setdefault(k, out)
                    if not _same(prev, out):
                        raise AssertionError(f"thread {i}: {k} changed between rounds")
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors[0]
    for i in range(n_threads):
        for k, want in serial.items():
            assert _same(results[i][k], want), (i, k)


def test_errors_in_threads_are_isolated() -> None:
    """A refused call in one thread does not disturb a valid call running in another."""
    out: dict[str, Any] = {}

    def bad() -> None:
        for _ in range(50):
            with pytest.raises(ValueError):
                mf.optimal_acceptance(P, Q, 400, "wor")
            with pytest.raises(mf.TooLargeError):
                mf.solve_lp(P[0], Q[0], 8, "iid", max_sets=10)

    def good() -> None:
        out["a"] = [mf.optimal_acceptance(P, Q, 4, "wor") for _ in range(20)]

    ts = [threading.Thread(target=bad), threading.Thread(target=good)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    want = mf.optimal_acceptance(P, Q, 4, "wor")
    assert all(np.array_equal(a, want) for a in out["a"])


@pytest.mark.parametrize(
    "name, scheme", [("rrs", None), ("rrs-wor", None), ("greedy", None), ("spechub", None), ("optimal-lp", "wor")]
)
def test_seeded_simulation_independent_of_thread_count(name: str, scheme: str | None) -> None:
    n = mf.verifiers[name].fixed_n or 3
    Pm, Qm = (
        (P[:, :6] / P[:, :6].sum(1, keepdims=True), Q[:, :6] / Q[:, :6].sum(1, keepdims=True))
        if name == "optimal-lp"
        else (P, Q)
    )
    ref = mf.simulate(name, Pm, Qm, n, 9000, rng=5, scheme=scheme, threads=1)
    for threads in (2, 3, 8, 64):
        got = mf.simulate(name, Pm, Qm, n, 9000, rng=5, scheme=scheme, threads=threads)
        for x, y in zip(got, ref, strict=True):
            assert np.array_equal(x, y), (name, threads)
    est1 = mf.acceptance(name, Pm, Qm, n, exact=False, samples=9000, rng=5, scheme=scheme, threads=1)
    est8 = mf.acceptance(name, Pm, Qm, n, exact=False, samples=9000, rng=5, scheme=scheme, threads=8)
    assert np.array_equal(est1[0], est8[0])
    # the estimate counts the same accepted flags the simulation returns
    assert np.array_equal(est1[0], ref.accepted.mean(axis=1))


def test_row_ids_make_streams_independent_of_batching() -> None:
    """With row_ids, a row's simulated estimate, samples and verified tokens do not depend on the
    batch it is in, its position or the order (results independent of chunking)."""
    rng = np.random.default_rng(0)
    P, Q = rng.dirichlet(np.ones(50), size=6), rng.dirichlet(np.ones(50), size=6)
    ids = np.array([10, 11, 12, 13, 14, 15])
    a, _ = mf.acceptance("rrs", P, Q, 3, exact=False, samples=5000, rng=1, row_ids=ids)
    b, _ = mf.acceptance("rrs", P[3:], Q[3:], 3, exact=False, samples=5000, rng=1, row_ids=ids[3:])
    c, _ = mf.acceptance("rrs", P[::-1], Q[::-1], 3, exact=False, samples=5000, rng=1, row_ids=ids[::-1])
    np.testing.assert_array_equal(a[3:], b)
    np.testing.assert_array_equal(a, c[::-1])
    plain, _ = mf.acceptance("rrs", P[3:], Q[3:], 3, exact=False, samples=5000, rng=1)
    assert not np.array_equal(plain, b)  # without ids the stream follows the position
    s1 = mf.simulate("kseq", P, Q, 2, 100, rng=3, row_ids=ids)
    s2 = mf.simulate("kseq", P[2:4], Q[2:4], 2, 100, rng=3, row_ids=ids[2:4])
    np.testing.assert_array_equal(s1.tokens[2:4], s2.tokens)
    d = s1.drafts[:, 0, :]
    t1, _ = mf.verify("kseq", P, Q, d, rng=4, row_ids=ids)
    t2, _ = mf.verify("kseq", P[1:], Q[1:], d[1:], rng=4, row_ids=ids[1:])
    np.testing.assert_array_equal(t1[1:], t2)
    for bad, exc in (([1, 2], ValueError), ([-1] * 6, ValueError), ([0.5] * 6, TypeError)):
        with pytest.raises(exc, match="row_ids"):
            mf.acceptance("rrs", P, Q, 3, exact=False, samples=10, rng=1, row_ids=bad)
