"""Memory and time guards: refusal before allocation (with the size needed), KeyboardInterrupt in
long C++ loops, and HiGHS statuses other than Optimal surfacing as SolverError with the status.

Budgets (documented in the package): ``solve_lp(max_sets=DEFAULT_MAX_SETS)``,
``verifiers.EXACT_BUDGET`` (rrs-wor's exact recursion) and ``verifiers.SIMULATE_BUDGET_BYTES``
(simulate's output arrays).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast.verifiers import EXACT_BUDGET, SIMULATE_BUDGET_BYTES


def _default_sigint() -> None:
    # A shell that runs a job in the background hands it SIGINT *ignored*, and a Python started
    # that way installs no KeyboardInterrupt handler; give the child the default disposition.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _run(code: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        preexec_fn=_default_sigint,
    )


def test_solve_lp_refuses_before_allocating() -> None:
    """A request for ~10^33 draft sets is refused in milliseconds, with the size, and the process's
    peak memory does not grow (measured in a fresh process: ru_maxrss before and after)."""
    out = _run(
        """
        import resource, time
        import numpy as np, mdsd_fast as mf
        V = 100_000
        p = np.full(V, 1.0 / V)
        mf.solve_lp(np.array([0.5, 0.5]), np.array([0.5, 0.5]), 2)  # warm up HiGHS and the module
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for scheme, n in (("iid", 8), ("wor", 8), ("greedy", 2)):
            t = time.perf_counter()
            try:
                mf.solve_lp(p, p, n, scheme, max_sets=1000)
            except mf.TooLargeError as e:
                print(scheme, "REFUSED", round(time.perf_counter() - t, 3), e)
        try:
            mf.acceptance("optimal-lp", p, p, 3)
        except mf.TooLargeError as e:
            print("optimal-lp REFUSED", e)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print("GROWTH_KB", after - before)
        """
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    refused = [line for line in lines if "REFUSED" in line]
    assert len(refused) == 4, out.stdout
    assert re.search(r"scheme='iid': the enumeration needs \d{36} draft sets, above max_sets=1000", refused[0])
    assert "scheme='wor': the enumeration needs" in refused[1]
    assert "scheme='greedy': the enumeration needs 99999 draft sets, above max_sets=1000" in refused[2]
    assert "optimal-lp needs the flow LP" in refused[3] and "above max_sets=2000000" in refused[3]
    for line in refused[:3]:
        assert float(line.split()[2]) < 1.0, line
    growth_kb = int(lines[-1].split()[1])
    assert growth_kb < 64 * 1024, growth_kb  # the p array alone is 0.8 MB; 10^33 sets would be ~10^35 bytes


def test_default_budget_message_states_the_size() -> None:
    V = 3000
    p = np.full(V, 1.0 / V)
    with pytest.raises(
        mf.TooLargeError, match=r"scheme='iid': the enumeration needs 4501500 draft sets, above max_sets=2000000"
    ):
        mf.solve_lp(p, p, 2, "iid")
    assert mf.DEFAULT_MAX_SETS == 2_000_000
    assert issubclass(mf.TooLargeError, ValueError)


def test_exact_acceptance_refuses_before_working() -> None:
    """rrs-wor's exact recursion costs ~K^(n-1): refused at once with the estimate and the budget."""
    rng = np.random.default_rng(0)
    V = 5000
    p, q = rng.dirichlet(np.ones(V)), rng.dirichlet(np.ones(V))
    t = time.perf_counter()
    with pytest.raises(mf.TooLargeError) as ei:
        mf.acceptance("rrs-wor", p, q, 6)
    assert time.perf_counter() - t < 2.0
    msg = str(ei.value)
    assert "for 5000 tokens with q > 0 and n = 6 it needs about" in msg
    assert f"above the budget of {EXACT_BUDGET:.3g}" in msg and "exact=False" in msg
    # A batch is refused before any row is computed, naming the cost.
    with pytest.raises(mf.TooLargeError, match="rrs-wor: the exact recursion"):
        mf.acceptance("rrs-wor", np.stack([p, p]), np.stack([q, q]), 6)
    # Just under the budget runs.
    small = rng.dirichlet(np.ones(60))
    assert 0 < mf.acceptance("rrs-wor", small, rng.dirichlet(np.ones(60)), 3) <= 1


def test_simulate_refuses_outputs_beyond_budget() -> None:
    p = np.array([0.5, 0.3, 0.2])
    t = time.perf_counter()
    with pytest.raises(
        mf.TooLargeError, match=r"simulate: 1 row\(s\) x 1000000000000 samples x n = 4 needs 4.56e\+04 GiB"
    ):
        mf.simulate("rrs", p, p, 4, 10**12)
    with pytest.raises(mf.TooLargeError, match=r"simulate: 3000 row\(s\) x 1000000 samples x n = 1"):
        mf.simulate("sd", np.tile(p, (3000, 1)), p, 1, 10**6)
    assert time.perf_counter() - t < 1.0
    assert SIMULATE_BUDGET_BYTES == 8 * 2**30
    # acceptance(exact=False) keeps no per-sample output: not limited by the byte budget
    est, se = mf.acceptance("rrs", p, p, 4, exact=False, samples=10**5, rng=0)
    assert est == 1.0


# ---------------------------------------------------------------------------------------------
# KeyboardInterrupt in long C++ loops


_INTERRUPT = """
import os, signal, threading, time
import numpy as np, mdsd_fast as mf
from mdsd_fast import _core
sent = [None]
def fire():
    time.sleep({delay})
    sent[0] = time.perf_counter()
    os.kill(os.getpid(), signal.SIGINT)
{setup}
threading.Thread(target=fire, daemon=True).start()
t0 = time.perf_counter()
try:
    {call}
    print("FINISHED", time.perf_counter() - t0)
except KeyboardInterrupt:
    print("INTERRUPTED", time.perf_counter() - sent[0])
# the module still works after an interrupt
print("AFTER", mf.optimal_acceptance([0.5, 0.3, 0.2], [0.2, 0.3, 0.5], 2, "wor"))
"""

#: Seconds from SIGINT to KeyboardInterrupt (the loops poll every 20 ms; sanitizer builds, which
#: run several times slower, raise it through the environment).
MAX_LATENCY = float(os.environ.get("MDSD_INTERRUPT_LATENCY", "1.0"))

LONG_CALLS = {
    # parallel_rows over sample blocks, one thread and all threads (~minutes uninterrupted)
    "estimate-1thread": (
        "p = np.array([0.5, 0.3, 0.2])",
        "mf.acceptance('rrs', p, p[::-1].copy(), 4, exact=False, samples=2**35, rng=0, threads=1)",
    ),
    "estimate-threads": (
        "p = np.array([0.5, 0.3, 0.2])",
        "mf.acceptance('kseq', p, p[::-1].copy(), 4, exact=False, samples=2**35, rng=0)",
    ),
    "simulate": (
        "p = np.array([0.5, 0.3, 0.2])",
        "[mf.simulate('rrs', p, p[::-1].copy(), 2, 10**7, rng=0) for _ in range(10**4)]",
    ),
    # the native push-relabel max-flow loop, without the certificate hint (~seconds per solve)
    "max-flow": (
        "rng = np.random.default_rng(0); V = 2500\n"
        "p = rng.dirichlet(np.ones(V)); q = rng.dirichlet(np.ones(V))\n"
        "m = _core.bound.FlowModel(p, q, 2, 'iid', 1e8, None, None)",
        "[m.max_flow(None) for _ in range(1000)]",
    ),
    # the full-vocabulary wor route of "optimal" with a large work budget: shipped row 336 at n = 2 runs every order and the
    # O(k^2) pair sweep (~25 s uninterrupted)
    "wor-race": (
        "ds = mf.load_dataset(); ch = next(iter(ds.iter_chunks(len(ds))))\n"
        "p = np.asarray(ch.p[336], dtype=np.float64); q = np.asarray(ch.q[336], dtype=np.float64)",
        "mf.acceptance('optimal', p, q, 2, scheme='wor', work_budget=1e13)",
    ),
    # draft-set enumeration (C++) inside solve_lp
    "set-enumeration": (
        "V = 4000; p = np.full(V, 1.0 / V)",
        "mf.solve_lp(p, p, 2, 'iid', max_sets=10**9, solver='flow')",
    ),
}


@pytest.mark.parametrize("kind", list(LONG_CALLS))
def test_keyboard_interrupt_is_prompt(kind: str) -> None:
    setup, call = LONG_CALLS[kind]
    code = _INTERRUPT.replace("{delay}", "1.0").replace("{setup}", setup).replace("{call}", call)
    out = _run(code, timeout=90)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("INTERRUPTED"), out.stdout + out.stderr
    latency = float(lines[0].split()[1])
    assert latency < MAX_LATENCY, (kind, latency)
    assert lines[1] == "AFTER 0.9857142857142858"


def test_interrupt_hook_does_not_fire_in_worker_threads() -> None:
    """Signals are handled in the main thread only: a long call in another Python thread keeps
    running while the main thread takes the KeyboardInterrupt."""
    out = _run(
        """
        import os, signal, threading, time
        import numpy as np, mdsd_fast as mf
        p = np.array([0.5, 0.3, 0.2]); q = p[::-1].copy()
        res = {}
        def work():
            res["est"] = mf.acceptance("rrs", p, q, 2, exact=False, samples=3 * 10**7, rng=0, threads=1)
        th = threading.Thread(target=work); th.start()
        time.sleep(0.3)
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        except KeyboardInterrupt:
            print("MAIN INTERRUPTED")
        th.join()
        print("WORKER", abs(res["est"][0] - mf.acceptance("rrs", p, q, 2)) < 1e-3)
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["MAIN", "INTERRUPTED", "WORKER", "True"]


# ---------------------------------------------------------------------------------------------
# HiGHS statuses


def test_highs_time_limit_is_a_solver_error_with_the_status() -> None:
    rng = np.random.default_rng(0)
    V = 40
    p, q = rng.dirichlet(np.ones(V)), rng.dirichlet(np.ones(V))
    with pytest.raises(mf.SolverError) as ei:
        mf.solve_lp(p, q, 3, "iid", time_limit=1e-6)
    assert ei.value.status == "Time limit reached"
    assert "Time limit reached" in str(ei.value)
    assert isinstance(ei.value, RuntimeError)
    # The limit does not leak into the next solve on this thread's reused Highs object.
    res = mf.solve_lp(p[:8] / p[:8].sum(), q[:8] / q[:8].sum(), 3, "iid")
    assert res.status == "Optimal"


def test_every_highs_solve_checks_the_status(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any model status other than Optimal raises, carrying the status name (PDLP's "Unknown" in
    LANDSCAPE §3.4 is the real-world case)."""
    import highspy

    from mdsd_fast.bound import lp as bound

    real = bound._highs

    def fake() -> object:
        h = real()

        class Wrapped:
            def __getattr__(self, name: str) -> object:
                return getattr(h, name)

            def getModelStatus(self) -> object:  # noqa: N802 (highspy's name)
                return highspy.HighsModelStatus.kUnknown

        return Wrapped()

    monkeypatch.setattr(bound, "_highs", fake)
    with pytest.raises(mf.SolverError) as ei:
        mf.solve_lp(np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5]), 2, "iid")
    assert ei.value.status == "Unknown"
    with pytest.raises(mf.SolverError):
        mf.optimal_acceptance(np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5]), 2, "iid", method="lp")
    with pytest.raises(mf.SolverError):
        mf.acceptance("optimal-lp", np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5]), 2)


def test_estimate_counters_are_budgeted() -> None:
    p = np.array([0.5, 0.3, 0.2])
    with pytest.raises(mf.TooLargeError, match=r"acceptance: 1 row\(s\) x 17592186044415 samples needs 32 GiB"):
        mf.acceptance("rrs", p, p, 2, exact=False, samples=2**44 - 1)
