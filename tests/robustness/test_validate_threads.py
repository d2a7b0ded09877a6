"""``threads=`` reaches input validation and every kernel: the entry points that take it hand it to
the C++ pass that checks and normalises dense p and q (``_core.inputs.normalize_rows``) and to every
kernel they run, so ``threads=1`` keeps a call on one core from its first pass on; and the
validated rows, like every result, are bit for bit the same on 1 and 2 threads.

The first test records the ``threads`` argument of every call of the real kernel (a pass-through
that calls it); before the fix every call got 0 (all cores) and the test fails for threads = 1
and 2. The ``None -> 0`` case is its control: the recording follows the argument.

The second group (``KERNEL_CALLS``: acceptance_bounds, the log report and its command line, draft
trees and the tree report) records the threads of every kernel that takes them (validation,
alpha*, verifier batches, tree values, direct verification). On the code before these entry points
passed threads on, 61 of its 64 recording cases fail: the log report, its command line and the tree
report ran kernels on all cores (e.g. ``tree_report(threads=1)``: verifier batches, alpha* and
validation on 0), and the other calls (drafting included) had no ``threads=`` (TypeError); the 3 ``None`` cases of the
calls that existed pass (the control). With the bit-identity and error cases, 79 of the file's 125
tests fail there; all pass now.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast import _core, trees
from mdsd_fast.inputs.pairs import as_distribution
from mdsd_fast.inputs.rules import MAX_THREADS
from mdsd_fast.report import ReportConfig

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
    """The ``threads`` of every call of the real ``_core.inputs.normalize_rows`` during the test, and of
    ``_core.bound.dual_direct`` (dense alpha*) and ``_core.verifiers.exact_closed`` (the closed forms),
    which validate each row in their own pass."""
    calls: list[int] = []
    real = _core.inputs.normalize_rows
    real_direct = _core.bound.dual_direct

    def recording(x: Any, tol: float, threads: int = 0) -> Any:
        calls.append(int(threads))
        return real(x, tol, threads)

    def recording_direct(p: Any, q: Any, n: int, scheme: str, wm: str, cert: bool, threads: int, tol: float) -> Any:
        calls.append(int(threads))
        return real_direct(p, q, n, scheme, wm, cert, threads, tol)

    real_closed = _core.verifiers.exact_closed

    def recording_closed(name: str, p: Any, q: Any, n: int, tol: float, threads: int, *rest: Any) -> Any:
        calls.append(int(threads))
        return real_closed(name, p, q, n, tol, threads, *rest)

    monkeypatch.setattr(_core.verifiers, "exact_closed", recording_closed)
    monkeypatch.setattr(_core.inputs, "normalize_rows", recording)
    monkeypatch.setattr(_core.bound, "dual_direct", recording_direct)
    return calls


@pytest.mark.parametrize("name", CALLS)
@pytest.mark.parametrize(("threads", "expected"), [(1, 1), (2, 2), (None, 0), (10**6, MAX_THREADS)])
def test_threads_reach_validation(name: str, threads: int | None, expected: int, seen: list[int]) -> None:
    CALLS[name](threads)
    assert seen, "no validation pass went through _core.inputs.normalize_rows or _core.bound.dual_direct"
    assert set(seen) == {expected}, seen


def _bits(x: Any) -> Any:
    """A value's exact bits (arrays with dtype and shape), through tuples, lists and dicts."""
    if x is None or isinstance(x, str):
        return x
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


# ---------------------------------------------------------------- every kernel, the newer entry points

#: Kernels that take a thread count, and the position of that argument (0 when not passed).
KERNELS = {
    "inputs.normalize_rows": 2,
    "bound.dual_batch": 6,
    "bound.dual_direct": 6,
    "verifiers.VerifierBatch": 6,
    "trees.values": 4,
    "verifiers.verify_direct": 5,
    "intervals.wor_low_end": 4,
    "intervals.wor_cut_min": 10,
}


@pytest.fixture
def kernels(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """(kernel, threads) of every call of the real kernels of ``KERNELS`` during the test."""
    calls: list[tuple[str, int]] = []
    for name, pos in KERNELS.items():
        sub, attr = name.split(".")
        real = getattr(getattr(_core, sub), attr)

        def recording(*args: Any, _real: Any = real, _name: str = name, _pos: int = pos, **kw: Any) -> Any:
            t = args[_pos] if len(args) > _pos else kw.get("threads", 0)
            calls.append((_name, int(t)))
            return _real(*args, **kw)

        monkeypatch.setattr(getattr(_core, sub), attr, recording)
    return calls


def _top(x: np.ndarray, k: int) -> np.ndarray:
    """Each row's k largest entries, zeros elsewhere (a truncated log, not renormalised)."""
    out = np.zeros_like(x)
    idx = np.argsort(-x, axis=1)[:, :k]
    np.put_along_axis(out, idx, np.take_along_axis(x, idx, axis=1), axis=1)
    return out


P_LOG, Q_LOG = (
    _top(P[:4, :60] / P[:4, :60].sum(1, keepdims=True), 12),
    _top(Q[:4, :60] / Q[:4, :60].sum(1, keepdims=True), 12),
)
# a tree: the root drafts nodes 1, 2 (wor), node 1 drafts node 3 (iid); V = 400
T_ARGS = (
    np.array([-1, 0, 0, 1]),
    np.array([-1, 5, 9, 7]),
    P[:4],
    Q[:4],
    np.array([0, 2, 3, 3, 3]),
    np.array([1, 2, 3]),
)
T_SCHEMES = ["wor", "iid", "", ""]
MAPPING = {"wor": "rrs-wor", "iid": "rrs"}  # a verifier per scheme


def _tree(t: int | None) -> trees.DraftTree:
    return trees.DraftTree(*T_ARGS, T_SCHEMES, threads=t)


def _oracle(prefix: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    g = np.random.default_rng(len(prefix) * 7 + sum(prefix))
    return g.dirichlet(np.ones(30)), g.dirichlet(np.ones(30))


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A log of 6 positions, written whole and cut to their top 8 (pyarrow: the ``logs`` extra)."""
    pytest.importorskip("pyarrow")
    from mdsd_fast.logs import LogWriter

    d = tmp_path_factory.mktemp("threads_log") / "log"
    p, q = P[:6, :50] / P[:6, :50].sum(1, keepdims=True), Q[:6, :50] / Q[:6, :50].sum(1, keepdims=True)
    with LogWriter(d, 50, rows_per_shard=4, dtype="float64") as w:
        for name, k in (("full", 50), ("top8", 8)):
            ids = np.sort(np.argsort(-p, axis=1)[:, :k], axis=1), np.sort(np.argsort(-q, axis=1)[:, :k], axis=1)
            parts = [
                (np.arange(0, i.size + 1, k), i.ravel(), np.take_along_axis(x, i, 1).ravel())
                for x, i in zip((p, q), ids, strict=True)
            ]
            meta = dict(
                draft=[name] * 6,
                domain=["a", "b"] * 3,
                temperature=[1.0] * 6,
                row_id=np.arange(6) + (0 if k == 50 else 6),
            )
            w.write(parts[0], parts[1], p_complete=k == 50, q_complete=k == 50, meta=meta)
    return d


def _log_report(t: int | None, path: Any, tmp: Any) -> Any:
    from mdsd_fast.report.logs import log_report

    cfg = ReportConfig(schemes=("iid", "wor"), ns=(1, 2), verifiers=("sd", "rrs", "rrs-wor", "optimal"), threads=t)
    rep = log_report(path, config=cfg, out_dir=tmp, progress=False)
    return rep.records, rep.findings


def _cli_report(t: int | None, path: Any, tmp: Any) -> int:
    from mdsd_fast.cli import main

    argv = ["report", "--dataset", str(path), "--schemes", "iid", "--n", "1,2", "--verifiers", "rrs"]
    argv += ["--out", str(tmp), "--no-plots", "--no-progress"] + ([] if t is None else ["--threads", str(t)])
    return main(argv)


def _tree_report(t: int | None) -> Any:
    kw: dict[str, Any] = dict(
        limit=2, shapes=["b2x4", "kseq4x4"], verifiers=["rrs-wor", "kseq", "optimal", "traversal"]
    )
    return trees.tree_report(threads=t, **kw).records


# name -> (needs the log, call(threads, log path, out dir))
KERNEL_CALLS: dict[str, Callable[[int | None, Any, Any], Any]] = {
    "acceptance_bounds iid": lambda t, _d, _o: mf.acceptance_bounds(P_LOG, Q_LOG, 2, "iid", threads=t),
    "acceptance_bounds wor": lambda t, _d, _o: mf.acceptance_bounds(P_LOG, Q_LOG, 2, "wor", search_steps=1, threads=t),
    "acceptance_bounds rrs": lambda t, _d, _o: mf.acceptance_bounds(P_LOG, Q_LOG, 3, verifier="rrs", threads=t),
    "log_report": _log_report,
    "cli report --threads": _cli_report,
    "DraftTree": lambda t, _d, _o: (_tree(t).p, _tree(t).q),
    "from_sibling_arrays": lambda t, _d, _o: (
        trees.DraftTree.from_sibling_arrays([-1, 5, 9], [1, -1, -1], [-1, 2, -1], P[:3], Q[:3], threads=t).q
    ),
    "tree_value rrs": lambda t, _d, _o: trees.tree_value(_tree(t), MAPPING, threads=t),
    "tree_value traversal": lambda t, _d, _o: trees.tree_value(_tree(t), "traversal", threads=t),
    "verify_tree": lambda t, _d, _o: trees.verify_tree(_tree(t), MAPPING, rng=1, threads=t),
    "drafted_bound": lambda t, _d, _o: tuple(trees.drafted_bound(_tree(t), threads=t)),
    "tree_report": lambda t, _d, _o: _tree_report(t),
    "draft_kseq": lambda t, _d, _o: trees.draft_kseq(_oracle, 3, 2, rng=2, threads=t).q,
    "draft_branching wor": lambda t, _d, _o: trees.draft_branching(_oracle, [3, 2], "wor", rng=2, threads=t).q,
    "draft_static": lambda t, _d, _o: trees.draft_static(_oracle, [[0], [1], [0, 0]], threads=t).q,
    "enumerate_branching": lambda t, _d, _o: [w for w, _ in trees.enumerate_branching(_oracle, [2], "wor", threads=t)],
}
_NEEDS_LOG = ("log_report", "cli report --threads")
# Calls whose input checks run in numpy, not in _core.inputs.normalize_rows: the log report and the CLI
# (their shards), and the wor bounds (both of their kernels take the logged entries as they are).
_NO_NORMALIZE = ("log_report", "cli", "acceptance_bounds wor")
#: The kernels that validate dense rows (dual_direct: dense alpha*, each row in its own pass).
_VALIDATING = ("inputs.normalize_rows", "bound.dual_direct")


@pytest.mark.parametrize("name", KERNEL_CALLS)
@pytest.mark.parametrize(("threads", "expected"), [(1, 1), (2, 2), (None, 0), (10**6, MAX_THREADS)])
def test_threads_reach_every_kernel(
    name: str,
    threads: int | None,
    expected: int,
    kernels: list[tuple[str, int]],
    request: pytest.FixtureRequest,
    tmp_path: Any,
) -> None:
    log = request.getfixturevalue("log_dir") if name in _NEEDS_LOG else None
    KERNEL_CALLS[name](threads, log, tmp_path / "o")
    assert any(k in _VALIDATING for k, _ in kernels) or name.startswith(_NO_NORMALIZE), kernels
    assert kernels, "no kernel ran"
    assert {t for _, t in kernels} == {expected}, sorted(set(kernels))


@pytest.mark.parametrize("name", KERNEL_CALLS)
def test_kernel_results_bit_identical_on_one_and_two_threads(
    name: str, request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    log = request.getfixturevalue("log_dir") if name in _NEEDS_LOG else None
    one, two = (KERNEL_CALLS[name](t, log, tmp_path / f"o{t}") for t in (1, 2))
    if name == "verify_tree":
        one, two = tuple(one), tuple(two)
    assert _bits(one) == _bits(two)


@pytest.mark.parametrize(
    "call",
    [
        lambda: ReportConfig(threads=0),
        lambda: mf.acceptance_bounds(P_LOG, Q_LOG, 2, threads=True),
        lambda: _tree(-1),
        lambda: trees.verify_tree(_tree(1), "rrs-wor", threads=1.5),  # type: ignore[arg-type]
    ],
)
def test_bad_threads_named(call: Callable[[], Any]) -> None:
    with pytest.raises(ValueError, match=r"^threads: expected a positive integer or None"):
        call()
