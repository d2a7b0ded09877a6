"""The two builds of the core side by side in one run: baseline (SSE2) against AVX2 (docs/guide/builds.md).

Run:  python bench/builds/isa_side_by_side.py [--reps 7] [--rows 16] [--json OUT]

Two worker processes of this script, one with MDSD_FAST_ISA=baseline and one with
MDSD_FAST_ISA=avx2, get the same jobs in turn (so a change of load hits both), each job timed as
the best of --reps calls in the worker's own thread CPU time, the two builds taking turns call by
call. Per job the table gives both times,
baseline / avx2, and whether the two results are the same bits (a digest of the job's output).

Jobs:
- ``copy``: np.copyto of p and q (the memory-stream floor of builds/roofline.py; the same numpy in
  both workers, so its ratio shows the noise of the run);
- ``alpha``: the C++ alpha* kernel (``_core.bound.dual_batch``) on one LLM-like row (_support.rows.llm_like,
  seed 0) for iid and wor, n = 2, 4, 8, at V = 49,152 and 151,936;
- ``public``: ``optimal_acceptance`` on a (64, 49,152) batch, one thread (validation included);
- ``verify``: the engine case, one tuple per row (``verify``, 64 rows of _support.rows.engine_rows);
- ``prepare``: the optimal without-replacement plan (``VerifierBatch("sweep")``, as
  verifiers/optimal_wor_route.py times it) on every --step-th shipped row and --heldout held-out rows, n = 4
  and 8: per row, then p50 / p99 of the rows' times and the median of the per-row ratios.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for _support


def digest(x: Any) -> str:
    h = hashlib.sha256()
    for a in x if isinstance(x, tuple | list) else (x,):
        h.update(np.ascontiguousarray(np.asarray(a)).tobytes())
    return h.hexdigest()[:12]


def best(f: Callable[[], Any], reps: int) -> tuple[float, Any]:
    out, t = None, float("inf")
    for _ in range(reps):
        c0 = time.thread_time()
        out = f()
        t = min(t, time.thread_time() - c0)
    return t * 1e3, out


def worker(step: int, heldout: int) -> None:
    """Answers "label reps" lines with "ms digest"."""
    from _support import tests_on_path
    from _support.rows import engine_rows, llm_like

    tests_on_path()

    import mdsd_fast as mf
    from heldout import heldout_rows
    from mdsd_fast import _core
    from mdsd_fast.inputs.pairs import as_pair

    print(mf.ISA, flush=True)
    pairs = {}
    for V in (49_152, 151_936):
        p2, q2, _ = as_pair(*llm_like(np.random.default_rng(0), V))
        pairs[V] = (p2, q2, np.empty_like(p2), np.empty_like(q2))
    P, Q = engine_rows(64, 49_152)
    drafts = {
        name: np.stack([mf.simulate(name, P[r], Q[r], n, 1, rng=r).drafts[0] for r in range(len(P))])
        for name, n in (("rrs", 4), ("kseq", 4), ("sd", 1))
    }
    ds = mf.load_dataset()
    idx = np.arange(0, len(ds), step)
    hp, hq, _ = heldout_rows(heldout, 0)
    wor_rows = [("shipped", i, ds.p[i], ds.q[i]) for i in idx] + [("held-out", i, hp[i], hq[i]) for i in range(heldout)]

    def job(label: str) -> Callable[[], Any]:
        kind, *a = label.split(":")
        if kind == "copy":
            p2, q2, bp, bq = pairs[int(a[0])]
            return lambda: (np.copyto(bp, p2), np.copyto(bq, q2), 0)[-1]
        if kind == "alpha":
            p2, q2, _, _ = pairs[int(a[0])]
            return lambda: _core.bound.dual_batch(p2, q2, int(a[2]), a[1], "auto", False, 1)[0]
        if kind == "public":
            return lambda: mf.optimal_acceptance(P, Q, 4, scheme=a[0], threads=1)
        if kind == "verify":
            name = a[0]
            d = drafts["rrs" if name == "optimal" else name]
            return lambda: mf.verify(name, P, Q, d, rng=3, threads=1)
        if kind == "prepare":
            _, i, p, q = wor_rows[int(a[1])]
            p2 = np.ascontiguousarray((p / p.sum())[None, :], np.float64)
            q2 = np.ascontiguousarray((q / q.sum())[None, :], np.float64)

            def prep() -> Any:
                vb = _core.verifiers.VerifierBatch("sweep", p2, q2, int(a[0]), "wor", None, 1, mf.WOR_WORK_BUDGET)
                return vb.route()["work"], vb.exact(2e8, 1)

            return prep
        raise ValueError(label)

    for line in sys.stdin:
        label, reps = line.split()
        ms, out = best(job(label), int(reps))
        print(f"{ms!r} {digest(out)}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--step", type=int, default=36, help="every k-th shipped row for 'prepare' (0: none)")
    ap.add_argument("--heldout", type=int, default=20, help="held-out rows for 'prepare'")
    ap.add_argument("--skip", default="", help="comma list of job kinds to leave out")
    ap.add_argument("--json", default=None)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(a.step, a.heldout)
        return 0
    procs = {}
    for isa in ("baseline", "avx2"):
        env = dict(os.environ, MDSD_FAST_ISA=isa)
        cmd = [sys.executable, __file__, "--worker", "--step", str(a.step), "--heldout", str(a.heldout)]
        procs[isa] = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    for isa, pr in procs.items():
        got = pr.stdout.readline().strip()
        if got != isa:
            print(f"the {isa} worker loaded the {got!r} build (this CPU or installation has no AVX2 build?)")
            return 1

    def ask(label: str, reps: int) -> dict[str, tuple[float, str]]:
        """The best of `reps` calls in each build, the builds taking turns call by call (this VM's
        speed drifts by up to ~2x over seconds: a block of calls per build would catch different
        drifts)."""
        res: dict[str, tuple[float, str]] = {}
        for _ in range(reps):
            for isa, pr in procs.items():
                pr.stdin.write(f"{label} 1\n")
                pr.stdin.flush()
                ms, dg = pr.stdout.readline().split()
                if isa in res and res[isa][1] != dg:
                    raise RuntimeError(f"{label}: the {isa} build gave two different results")
                res[isa] = (min(float(ms), res[isa][0]) if isa in res else float(ms), dg)
        return res

    skip = set(a.skip.split(",")) - {""}
    print("| job | baseline ms | avx2 ms | baseline / avx2 | same bits |")
    print("|---|---|---|---|---|")
    record = []
    simple = [f"copy:{V}" for V in (49_152, 151_936)]
    simple += [f"alpha:{V}:{s}:{n}" for V in (49_152, 151_936) for s in ("iid", "wor") for n in (2, 4, 8)]
    simple += ["public:iid", "public:wor"]
    simple += [f"verify:{v}" for v in ("sd", "rrs", "kseq", "optimal")]
    for label in simple:
        if label.split(":")[0] in skip:
            continue
        r = ask(label, a.reps)
        (tb, db), (ta, da) = r["baseline"], r["avx2"]
        record.append(dict(job=label, baseline_ms=tb, avx2_ms=ta, same=db == da))
        print(f"| {label} | {tb:.3f} | {ta:.3f} | {tb / ta:.2f} | {'yes' if db == da else 'NO'} |", flush=True)
    if "prepare" not in skip:
        nrows = (len(range(0, 537, a.step)) if a.step else 0) + a.heldout
        print("\n| prepare rows | n | baseline p50 / p99 ms | avx2 p50 / p99 ms | p50 of row ratios | same bits |")
        print("|---|---|---|---|---|---|")
        for n in (4, 8):
            for name, sel in (
                ("shipped", lambda j: j < nrows - a.heldout),
                ("held-out", lambda j: j >= nrows - a.heldout),
            ):
                tb, ta, same = [], [], 0
                for j in range(nrows):
                    if not sel(j):
                        continue
                    r = ask(f"prepare:{n}:{j}", max(2, a.reps // 2))
                    tb.append(r["baseline"][0])
                    ta.append(r["avx2"][0])
                    same += r["baseline"][1] == r["avx2"][1]
                if not tb:
                    continue
                b, v = np.array(tb), np.array(ta)
                rec = dict(job=f"prepare:{name}:{n}", baseline=tb, avx2=ta, same=same, rows=len(tb))
                record.append(rec)
                print(
                    f"| {name} | {n} | {np.median(b):.1f} / {np.percentile(b, 99):.1f} | "
                    f"{np.median(v):.1f} / {np.percentile(v, 99):.1f} | {np.median(b / v):.2f} | {same}/{len(tb)} |",
                    flush=True,
                )
    for pr in procs.values():
        pr.stdin.close()
        pr.wait()
    if a.json:
        Path(a.json).write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
