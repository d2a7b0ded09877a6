"""The wor route's preparation in several forms side by side in one run, row by row.

Run:  python studies/wor_prepare_forms.py [--forms pass_e,new] [--base-pythonpath DIR]
                                           [--ns 2,3,4,8] [--step 18] [--heldout 40] [--reps 2] [--budget B]

Forms (each a worker process, all fed the same rows in turn, so that load changes hit them alike):
  new       this build, its defaults;
  pass_e    this build with the checkpointed race pass keeping every token's e
            (``_testing.race_pass_keeps_e(True)``, the form it replaced);
  events_e  this build with the prefix-event sweep's scans keeping every token's e
            (``_testing.wor_events_keeps_e(True)``, the form it replaced);
  outer_pass this build with the outer system's rank and round passes checkpointed
            (``_testing.wor_outer_by_division(False)``, the form it replaced);
  base      another build (``--base-pythonpath``: a directory holding its mdsd_fast), its defaults.

Rows as verifiers/optimal_wor_route.py (every --step-th shipped row, --heldout rows of tests/heldout.py seed 0).
Per row and form: the best of --reps thread CPU times (ms) of the timed call of verifiers/optimal_wor_route.py,
and whether the route's work spent and acceptance equal the last form's. Prints p50 / p90 / p99 /
max / total per (set, n) and form, and the median over rows of each form's time over the last form's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
# form -> (the _testing toggle, its value), None: the build's defaults
TOGGLES = {
    "new": None,
    "pass_e": ("race_pass_keeps_e", True),
    "events_e": ("wor_events_keeps_e", True),
    "outer_pass": ("wor_outer_by_division", False),
    "base": None,
}


def row_sets(step: int, heldout: int) -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    import mdsd_fast as mf

    sys.path.insert(0, str(ROOT / "tests"))
    from heldout import heldout_rows

    ds = mf.load_dataset()
    idx = np.arange(0, len(ds), step)
    hp, hq, _ = heldout_rows(heldout, 0)
    return {
        "shipped": list(zip(np.asarray(ds.p[idx], np.float64), np.asarray(ds.q[idx], np.float64), strict=True)),
        "held-out": list(zip(hp, hq, strict=True)),
    }


def worker(form: str, step: int, heldout: int, budget: float | None) -> None:
    """Reads "set row n reps" lines, answers "cpu_ms work acceptance" (the best of reps)."""
    import mdsd_fast as mf
    from mdsd_fast import _core

    if TOGGLES[form]:
        toggle, value = TOGGLES[form]
        getattr(_core._testing, toggle)(value)
    sets = row_sets(step, heldout)
    for line in sys.stdin:
        name, i, n, reps = line.split()
        p, q = sets[name][int(i)]
        p2 = np.ascontiguousarray((p / p.sum())[None, :])
        q2 = np.ascontiguousarray((q / q.sum())[None, :])
        best = float("inf")
        for _ in range(int(reps)):
            c0 = time.thread_time()
            vb = _core.VerifierBatch("sweep", p2, q2, int(n), "wor", None, 1, budget or mf.WOR_WORK_BUDGET)
            best = min(best, (time.thread_time() - c0) * 1e3)
        print(f"{best!r} {float(vb.route()['work'][0])!r} {float(vb.exact(2e8, 1)[0])!r}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--forms", default="pass_e,new", help="comma list of " + ", ".join(TOGGLES))
    ap.add_argument("--base-pythonpath", help="a directory holding the base build's mdsd_fast (form 'base')")
    ap.add_argument("--ns", default="2,3,4,8")
    ap.add_argument("--step", type=int, default=18)
    ap.add_argument("--heldout", type=int, default=40)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--budget", type=float, help="the route's work budget (default: mf.WOR_WORK_BUDGET)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(a.worker, a.step, a.heldout, a.budget)
        return
    forms = a.forms.split(",")
    procs = {}
    for f in forms:
        pp = a.base_pythonpath if f == "base" else str(ROOT / "python")
        cmd = [sys.executable, __file__, "--worker", f, "--step", str(a.step), "--heldout", str(a.heldout)]
        cmd += ["--budget", str(a.budget)] if a.budget else []
        env = dict(os.environ, PYTHONPATH=pp)
        procs[f] = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    sets = row_sets(a.step, a.heldout)
    head = " | ".join(f"{f} p50 / p90 / p99 / max / total" for f in forms)
    same = " | ".join(f"{f}: same work, acc; p50 of row ratios to {forms[-1]}" for f in forms[:-1])
    print(f"| rows | n | {head} | {same} |")
    print("|---|---|" + "---|" * (2 * len(forms) - 1))
    for name, rows in sets.items():
        for n in [int(x) for x in a.ns.split(",")]:
            t: dict[str, list[float]] = {f: [] for f in forms}
            res: dict[str, list[tuple[float, float]]] = {f: [] for f in forms}
            for i, (_, q) in enumerate(rows):
                if np.count_nonzero(q) < n:
                    continue
                for f in forms:
                    procs[f].stdin.write(f"{name} {i} {n} {a.reps}\n")
                    procs[f].stdin.flush()
                    ms, work, acc = (float(x) for x in procs[f].stdout.readline().split())
                    t[f].append(ms)
                    res[f].append((work, acc))
            ref = res[forms[-1]]
            cols = []
            for f in forms:
                v = t[f]
                cols.append(" / ".join(f"{np.percentile(v, x):.1f}" for x in (50, 90, 99, 100)) + f" / {sum(v):.0f}")
            sames = []
            for f in forms[:-1]:
                sw = sum(x[0] == y[0] for x, y in zip(res[f], ref, strict=True))
                sa = sum(x[1] == y[1] for x, y in zip(res[f], ref, strict=True))
                ratio = np.median(np.array(t[f]) / np.array(t[forms[-1]]))
                sames.append(f"{sw}/{len(ref)}, {sa}/{len(ref)}; {ratio:.3f}")
            print(f"| {name} | {n} | {' | '.join(cols)} | {' | '.join(sames)} |", flush=True)
    for pr in procs.values():
        pr.stdin.close()
        pr.wait()


if __name__ == "__main__":
    main()
