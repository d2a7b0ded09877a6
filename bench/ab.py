"""A/B: two builds of mdsd_fast timed on the same public calls, or their results compared bit for bit.

    python bench/ab.py time [--base REF] [--rounds 7] [--reps 3] [--jobs "verify sd, 64 rows; alpha wor n=4, 1 row"]
    python bench/ab.py bits [--base REF] [--rows 300] [--cli quick|full]

The base (default: the merge-base with main, or HEAD~1 on main) is checked out with ``git
worktree`` into a temporary directory, built as a wheel (``pip wheel --no-deps
--no-build-isolation``; ``--baseline-only`` skips the AVX2 core) and installed there with ``pip
install --target``. The head is the working tree's in-place build (python/mdsd_fast/_core*.so), or
built the same way when there is none. ``--base-path DIR`` / ``--head-path DIR`` take a directory
that already holds a built mdsd_fast and skip building that side.

``time``: one long-lived worker per build (PYTHONPATH = that build) gets the same calls in turn,
the first side alternating between rounds; each call is the best thread CPU time of --reps
(threads=1), so load slows both sides alike. The ratio base / head is the claim, not either time.

``bits``: each build dumps public results on the shipped data (alpha* of every scheme at n = 2, 4,
8; every registry verifier's exact acceptance where it applies; the optimal plans' outputs from
``simulate`` and ``verify`` with fixed seeds, and their exact output laws on drawn tuples; the CSVs of ``mdsd-fast report`` and ``mdsd-fast
trees``) and the dumps are compared byte for byte. Only the public API and the CLI are used (the laws
also take the compiled core's ``VerifierBatch``, found in either layout), so any two layouts of
the package compare.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
V_ENGINE = 49_152
JOBS = (
    "alpha iid n=4, 1 row",
    "alpha wor n=4, 1 row",
    "alpha iid n=4, 64 rows",
    "verify sd, 64 rows",
    "verify rrs n=4, 64 rows",
    "verify kseq n=4, 64 rows",
    "verify optimal n=4, 16 rows",
    "bounds iid n=4, 64 top-20 rows",
)


def sh(cmd: list[Any], **kw: Any) -> str:
    print("+", " ".join(map(str, cmd)), file=sys.stderr, flush=True)
    return subprocess.run(list(map(str, cmd)), check=True, text=True, stdout=subprocess.PIPE, **kw).stdout.strip()


def build(src: Path, work: Path, baseline_only: bool) -> str:
    """Build src as a wheel and install it under work/site: a PYTHONPATH holding that build."""
    env = dict(os.environ, CMAKE_BUILD_PARALLEL_LEVEL=os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "1"))
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", work / "wheel", src]
    # MDSD_ISA for this tree, MDSD_AVX2 for a base ref from before it (each ignores the other)
    isa = ["MDSD_ISA=baseline", "MDSD_AVX2=OFF"] if baseline_only else ["MDSD_ISA=both"]
    sh(cmd + [f"--config-settings=cmake.define.{d}" for d in isa], env=env)
    sh(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--target",
            work / "site",
            *(work / "wheel").glob("*.whl"),
        ]
    )
    return str(work / "site")


def default_base() -> str:
    head = sh(["git", "-C", ROOT, "rev-parse", "HEAD"])
    base = sh(["git", "-C", ROOT, "merge-base", "HEAD", "main"])
    return "HEAD~1" if base == head else base


def sides(a: argparse.Namespace, tmp: Path) -> dict[str, str]:
    base = a.base_path
    if base is None:
        src = tmp / "base-src"
        sh(["git", "-C", ROOT, "worktree", "add", "--detach", src, a.base or default_base()])
        try:
            base = build(src, tmp / "base", a.baseline_only)
        finally:
            sh(["git", "-C", ROOT, "worktree", "remove", "--force", src])
    head = a.head_path
    if head is None:
        inplace = ROOT / "python"
        built = list((inplace / "mdsd_fast").glob("_core*.so"))
        head = str(inplace) if built else build(ROOT, tmp / "head", a.baseline_only)
    return {"base": base, "head": head}


def env_for(path: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=path)


def machine() -> str:
    cpu = platform.processor()
    try:
        cpu = next(ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{cpu}; {os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))}); {platform.platform()}"


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


# --- the worker side: runs under one build's PYTHONPATH ---------------------------------------


def engine_case() -> dict[str, Any]:
    """The calls of ``time``: public API, one thread, the engine case's LLM-like rows."""
    import numpy as np

    import mdsd_fast as mf

    sys.path.insert(0, str(ROOT / "bench"))
    from _support.rows import engine_rows

    P, Q = engine_rows(64, V_ENGINE)
    d = {v: np.stack([mf.simulate(v, P[r], Q[r], n, 1, rng=r).drafts[0] for r in range(64)]) for v, n in
         (("sd", 1), ("rrs", 4), ("kseq", 4), ("optimal", 4))}  # fmt: skip
    top = np.argsort(-P, axis=1)[:, :20], np.argsort(-Q, axis=1)[:, :20]
    tp = mf.TopK(top[0], np.take_along_axis(P, top[0], 1) * 0.95, V_ENGINE)
    tq = mf.TopK(top[1], np.take_along_axis(Q, top[1], 1) * 0.95, V_ENGINE)
    p, q = P[0], Q[0]
    calls = (
        lambda: mf.optimal_acceptance(p, q, 4, "iid", threads=1),
        lambda: mf.optimal_acceptance(p, q, 4, "wor", threads=1),
        lambda: mf.optimal_acceptance(P, Q, 4, "iid", threads=1),
        lambda: mf.verify("sd", P, Q, d["sd"], rng=1, threads=1),
        lambda: mf.verify("rrs", P, Q, d["rrs"], rng=1, threads=1),
        lambda: mf.verify("kseq", P, Q, d["kseq"], rng=1, threads=1),
        lambda: mf.verify("optimal", P[:16], Q[:16], d["optimal"][:16], rng=1, threads=1),
        lambda: mf.acceptance_bounds(tp, tq, 4, "iid", threads=1),
    )
    return dict(zip(JOBS, calls, strict=True))


def worker() -> None:
    import mdsd_fast as mf

    calls = engine_case()
    print(json.dumps({"version": mf.__version__, "file": mf.__file__, "isa": getattr(mf, "ISA", "?")}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        f, best = calls[req["job"]], float("inf")
        for _ in range(req["reps"]):
            t0 = time.thread_time()
            f()
            best = min(best, time.thread_time() - t0)
        print(json.dumps({"s": best}), flush=True)


def dump(out: Path, rows: int, cli: str) -> None:
    """Write this build's public results under out: results.npz and the CLIs' output directories."""
    import numpy as np

    import mdsd_fast as mf

    ds = mf.load_dataset()
    pick = set(np.linspace(0, len(ds) - 1, rows).astype(int).tolist())
    P, Q, start = [], [], 0
    for ch in ds.iter_chunks(64, renormalize=True):
        keep = [i - start for i in range(start, start + len(ch.p)) if i in pick]
        P.append(ch.p[keep])
        Q.append(ch.q[keep])
        start += len(ch.p)
    P, Q = np.concatenate(P), np.concatenate(Q)
    # top-16 cuts of every 4th picked row: small supports, where every exact route applies
    idx = np.argsort(-P[::4], axis=1)[:, :16], np.argsort(-Q[::4], axis=1)[:, :16]
    cuts = [np.zeros_like(X[::4]) for X in (P, Q)]
    for c, X, ix in zip(cuts, (P, Q), idx, strict=True):
        np.put_along_axis(c, ix, np.take_along_axis(X[::4], ix, 1), 1)
        c /= c.sum(axis=1, keepdims=True)
    sets = {"cut": tuple(cuts), "full": (P[:8], Q[:8])}
    res: dict[str, Any] = {}

    def put(key: str, f: Any) -> None:
        try:
            v = f()
            res[key] = np.asarray(v if not isinstance(v, tuple) else np.stack([np.asarray(x, float) for x in v]))
        except ValueError as e:  # refusals must agree too
            res[key] = np.frombuffer(type(e).__name__.encode(), np.uint8)

    for scheme in ("iid", "wor", "greedy", "topk", "top1+iid", "top1+wor"):
        for n in (2, 4, 8):
            put(f"alpha/{scheme}/{n}", lambda s=scheme, n=n: mf.optimal_acceptance(P, Q, n, s))
    for name, v in mf.verifiers.items():
        for n in (1, 2, 4, 8):
            if v.n_min <= n <= v.n_max and (name, n) != ("optimal-lp", 8):  # its LP: ~5e5 sets a row
                for sk, (p, q) in sets.items():
                    put(f"exact/{name}/{n}/{sk}", lambda nm=name, n=n, p=p, q=q: mf.acceptance(nm, p, q, n))

    def sim_verify(name: str, p: Any, q: Any, n: int, scheme: str) -> Any:
        drafts = mf.simulate(name, p, q, n, 1, rng=3, scheme=scheme).drafts[:, 0]  # the verifier's own scheme
        return mf.verify(name, p, q, drafts, rng=11, scheme=scheme)

    for name, scheme in (("optimal", "iid"), ("optimal", "wor"), ("sweep", "wor"), ("rrs", "iid"), ("kseq", "iid")):
        for sk, (p, q) in sets.items():
            for n in (2, 4):
                k, args = f"{name}/{scheme}/{n}/{sk}", (name, p, q, n)
                put(f"simulate/{k}", lambda a=args, s=scheme: mf.simulate(*a, 2000, rng=7, scheme=s)[:2])
                put(f"verify/{k}", lambda a=args, s=scheme: sim_verify(*a, s))
    # The optimal plans' exact output laws Pr[y | tuple] on drawn tuples: the core's VerifierBatch.law,
    # found in either layout of the compiled module (flat, or its verifiers submodule).
    from mdsd_fast import _core

    batch = getattr(_core, "verifiers", _core).VerifierBatch
    for name, scheme in (("optimal", "iid"), ("optimal", "wor"), ("sweep", "wor")):
        for sk, (p, q) in sets.items():
            for n in (2, 4):
                p2, q2 = np.ascontiguousarray(p, np.float64), np.ascontiguousarray(q, np.float64)

                def laws(p2: Any = p2, q2: Any = q2, name: str = name, scheme: str = scheme, n: int = n) -> Any:
                    b = batch(name, p2, q2, n, scheme, None, 1, 2e9)
                    drawn = [mf.simulate(name, p2[r], q2[r], n, 16, rng=r, scheme=scheme).drafts for r in range(4)]
                    return np.stack([b.law(d, r) for r, d in enumerate(drawn)])

                put(f"law/{name}/{scheme}/{n}/{sk}", laws)
    np.savez(out / "results.npz", **res)
    quick = cli == "quick"
    T = mf.load_dataset().temperatures[0]
    report = ["report", "--no-progress"] + (["--n", "2", "--temperatures", str(T)] if quick else [])
    for args in (report, ["trees", "--limit", "2"] if quick else ["trees"]):
        cmd = [sys.executable, "-m", "mdsd_fast", *args, "--out", str(out / args[0]), "--no-plots"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


# --- the orchestrating side -------------------------------------------------------------------


def run_time(a: argparse.Namespace, paths: dict[str, str]) -> None:
    procs = {
        s: subprocess.Popen([sys.executable, __file__, "_worker"], env=env_for(p), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
        for s, p in paths.items()
    }  # fmt: skip
    for s, pr in procs.items():
        assert pr.stdout is not None
        print(f"{s}: {pr.stdout.readline().strip()} (PYTHONPATH={paths[s]})")
    print(f"machine: {machine()}\nload average at start: {load()}")
    jobs = [j.strip() for j in a.jobs.split(";")] if a.jobs else list(JOBS)
    times: dict[str, dict[str, list[float]]] = {}
    for r in range(a.rounds):
        order = list(procs) if r % 2 == 0 else list(procs)[::-1]
        for job in jobs:
            for s in order:
                pr = procs[s]
                assert pr.stdin is not None and pr.stdout is not None
                pr.stdin.write(json.dumps({"job": job, "reps": a.reps}) + "\n")
                pr.stdin.flush()
                times.setdefault(job, {}).setdefault(s, []).append(json.loads(pr.stdout.readline())["s"])
    for pr in procs.values():
        pr.communicate("")
    print(f"load average at end: {load()}\n")
    print(f"{a.rounds} rounds, each call the best thread CPU time of {a.reps}, threads=1:\n")
    print("| call | base ms | head ms | base / head (median) | per round min-max |\n|---|--:|--:|--:|---|")
    for job, t in times.items():
        ratios = [b / h for b, h in zip(t["base"], t["head"], strict=True)]
        med = [statistics.median(t[s]) * 1e3 for s in ("base", "head")]
        print(f"| {job} | {med[0]:.3f} | {med[1]:.3f} | {statistics.median(ratios):.2f} | "
              f"{min(ratios):.2f}-{max(ratios):.2f} |")  # fmt: skip


def run_bits(a: argparse.Namespace, paths: dict[str, str], tmp: Path) -> int:
    import numpy as np

    d = {s: tmp / f"dump-{s}" for s in ("base", "head")}  # beside the builds under tmp/<side>
    for s, p in paths.items():
        d[s].mkdir()
        sh([sys.executable, __file__, "_dump", d[s], "--rows", a.rows, "--cli", a.cli], env=env_for(p))
    r = [np.load(d[s] / "results.npz") for s in ("base", "head")]
    diff = sorted(set(r[0].files) ^ set(r[1].files))
    for k in sorted(set(r[0].files) & set(r[1].files)):
        x, y = r[0][k], r[1][k]
        if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
            diff.append(k)
    csvs = sorted({f.relative_to(d[s]) for s in d for f in d[s].rglob("*.csv")})
    for c in csvs:
        f = [d[s] / c for s in ("base", "head")]
        if not all(x.exists() for x in f) or f[0].read_bytes() != f[1].read_bytes():
            diff.append(str(c))
    print(f"compared {len(r[0].files)} result arrays and {len(csvs)} CSV files ({', '.join(map(str, csvs))})")
    print("identical" if not diff else f"DIFFERENT ({len(diff)}): " + ", ".join(diff))
    return 1 if diff else 0


def main() -> int:
    if sys.argv[1:2] == ["_worker"]:
        worker()
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["time", "bits", "_dump"])
    ap.add_argument("out", nargs="?", help=argparse.SUPPRESS)
    ap.add_argument("--base", help="git ref of the base (default: merge-base with main, or HEAD~1)")
    ap.add_argument("--base-path", help="a directory holding a built mdsd_fast: the base, not built")
    ap.add_argument("--head-path", help="a directory holding a built mdsd_fast: the head, not built")
    ap.add_argument("--baseline-only", action="store_true", help="build without the AVX2 core (faster)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--jobs", help='call names separated by ";" (default: all)')
    ap.add_argument("--rows", type=int, default=300, help="bits: shipped rows (evenly spaced)")
    ap.add_argument("--cli", choices=["quick", "full"], default="quick",
                    help="bits: quick = report at n = 2 and one temperature, trees on 2 per shape")  # fmt: skip
    a = ap.parse_args()
    if a.mode == "_dump":
        dump(Path(a.out), a.rows, a.cli)
        return 0
    with tempfile.TemporaryDirectory(prefix="mdsd-ab-") as t:
        paths = sides(a, Path(t))
        if a.mode == "time":
            run_time(a, paths)
            return 0
        return run_bits(a, paths, Path(t))


if __name__ == "__main__":
    sys.exit(main())
