"""Streaming a sharded log of synthetic LLM-like top-k positions through the report.

Run:  python bench/logs/stream_positions.py [--positions 1000000] [--workers 1,2] [--out /tmp/bench_logs]

Positions: V = 49,152; per position a target and a draft row each supported on its top 20 tokens
(the distribution an engine samples with top_k = 20; the APIs' top_logprobs = 20) out of 32 shared
candidates, logits 3 * N(0, 1) for the target and the target's plus 2 * N(0, 1) for the draft, so the
two supports overlap on most tokens (union support ~22-28). The rows are complete (renormalised on
their top 20), so every value is exact: alpha* iid and wor at n = 4 and rrs's exact acceptance.

Measured, each step in its own process (peak RSS from getrusage of the children):
  * write: LogWriter positions/s and bytes/position on disk (Parquet, zstd, page checksums),
    and the same columns as one LZMA .npz (write_npz) for comparison;
  * read: iter_chunks positions/s;
  * report: log_report at N/10 and N positions with 1 and 2 workers (positions/s, CPU seconds, peak RSS);
  * the same 64 positions logged truncated (top 20, 5% unseen per side): acceptance_bounds intervals;
  * bounds: acceptance_bounds alone on such truncated rows, iid and wor n = 4, positions per CPU-second
    (``--truncated-only`` runs just the truncated steps; ``--before REF`` runs them also with the
    package's Python sources at git ref REF, for a before / after in one run);
  * converters: from_openai_jsonl on a JSONL pair written here (top 20 per position) and
    from_dataset on the shipped flat dataset.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for _support
from _support.rows import CANDIDATES, K, V, synth  # noqa: E402


def step(args: list[str], pythonpath: str | None = None) -> dict[str, Any]:
    """Run one step in a fresh process (its own peak RSS and its workers'), with the package found
    first on ``pythonpath`` if given."""
    env = dict(os.environ, PYTHONPATH=pythonpath) if pythonpath else None
    proc = subprocess.run(
        [sys.executable, __file__, "--step", *args], capture_output=True, text=True, check=False, env=env
    )
    if proc.returncode:
        raise SystemExit(proc.stderr)
    res: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    print(json.dumps(res), flush=True)
    return res


def do_write(out: str, n: int) -> dict[str, Any]:
    from mdsd_fast.logs import LogWriter

    rng = np.random.default_rng(0)
    block = 50_000
    t_gen = t_write = 0.0
    with LogWriter(out, V, rows_per_shard=250_000) as w:
        for start in range(0, n, block):
            t0 = time.perf_counter()
            b = min(block, n - start)
            p, q = synth(rng, b)
            t1 = time.perf_counter()
            meta = dict(
                model=["target"] * b,
                draft=["draft"] * b,
                temperature=np.ones(b),
                domain=np.where(np.arange(start, start + b) % 2 == 0, "chat", "code"),
                prompt_id=(np.arange(start, start + b) // 64).astype(str),
                position=np.arange(start, start + b) % 64,
            )
            w.write(p, q, p_complete=True, q_complete=True, meta=meta)
            t_gen += t1 - t0
            t_write += time.perf_counter() - t1
    size = sum(f.stat().st_size for f in Path(out).glob("shard-*.parquet"))
    return dict(step="write", positions=n, write_pos_per_s=n / t_write, bytes_per_position=size / n, gen_s=t_gen)


def do_npz(out: str, n: int) -> dict[str, Any]:
    """The same columns as one LZMA .npz (the flat dataset's container) for comparison."""
    from mdsd_fast.data import write_npz

    rng = np.random.default_rng(0)
    p, q = synth(rng, n)
    arrays = dict(
        p_ids=p[1].astype(np.int32),
        p_probs=p[2].astype(np.float32),
        q_ids=q[1].astype(np.int32),
        q_probs=q[2].astype(np.float32),
        p_len=np.diff(p[0]).astype(np.int16),
        q_len=np.diff(q[0]).astype(np.int16),
        row_id=np.arange(n),
        position=np.arange(n) % 64,
        temperature=np.ones(n),
    )
    t0 = time.perf_counter()
    write_npz(out, arrays)
    tw = time.perf_counter() - t0
    t0 = time.perf_counter()
    with np.load(out) as z:
        _ = {k: z[k] for k in z.files}  # a member is read whole: no chunked access
    tr = time.perf_counter() - t0
    return dict(
        step="npz",
        positions=n,
        bytes_per_position=os.path.getsize(out) / n,
        write_pos_per_s=n / tw,
        read_pos_per_s=n / tr,
    )


def do_read(out: str) -> dict[str, Any]:
    from mdsd_fast.logs import open_logs

    logs = open_logs(out)
    t0 = time.perf_counter()
    n = sum(len(c) for c in logs.iter_chunks(4096))
    return dict(step="read", positions=n, read_pos_per_s=n / (time.perf_counter() - t0))


def do_report(out: str, limit: int, workers: int) -> dict[str, Any]:
    from mdsd_fast.report import ReportConfig
    from mdsd_fast.report.logs import log_report

    cfg = ReportConfig(schemes=("iid", "wor"), ns=(4,), verifiers=("rrs",), threads=1)
    t0 = time.perf_counter()
    rep = log_report(out, config=cfg, workers=workers, limit=limit, progress=False)
    dt = time.perf_counter() - t0
    a = {(r["scheme"], r["method"], r["domain"]): r["mean"] for r in rep.records if r["kind"] != "interval"}
    n = rep.metadata["positions"]["complete"]
    means = {f"{s}/{m}": round(v, 6) for (s, m, d), v in a.items() if d == "all"}
    return dict(step="report", positions=n, workers=workers, seconds=dt, pos_per_s=n / dt, means=means)


def do_truncated(out: str, n: int) -> dict[str, Any]:
    """The same positions logged as truncated top-20 rows (5% of each side's mass unseen): intervals."""
    from mdsd_fast.logs import LogWriter
    from mdsd_fast.report import ReportConfig
    from mdsd_fast.report.logs import log_report

    p, q = synth(np.random.default_rng(0), n)
    with LogWriter(out, V) as w:
        w.write((p[0], p[1], p[2] * 0.95), (q[0], q[1], q[2] * 0.95), p_complete=False, q_complete=False, meta={})
    cfg = ReportConfig(schemes=("iid", "wor"), ns=(4,), verifiers=("rrs",), threads=1)
    t0 = time.perf_counter()
    rep = log_report(out, config=cfg, progress=False)
    dt = time.perf_counter() - t0
    widths = {
        f"{r['scheme']}/{r['method']}": round(r["mean_high"] - r["mean_low"], 4)
        for r in rep.records
        if r["kind"] == "interval" and r["positions"]
    }
    return dict(step="report-truncated", positions=n, seconds=dt, pos_per_s=n / dt, mean_widths=widths)


def truncated_topk(n: int) -> tuple[Any, Any]:
    """n truncated top-20 rows as TopK logs: synth's rows with 5% of each side's mass unseen, keeping
    only the rows whose unlogged tokens can hold it (with logits 3 * N(0, 1) some rows' 20th token is
    too improbable for that; acceptance_bounds refuses such a log)."""
    from mdsd_fast import TopK

    p, q = synth(np.random.default_rng(0), 4 * n)
    pv, qv = (0.95 * x[2].reshape(-1, K) for x in (p, q))
    ok = np.flatnonzero((pv.min(axis=1) * (V - K) > 0.05 * 1.01) & (qv.min(axis=1) * (V - K) > 0.05 * 1.01))[:n]
    return (TopK(p[1].reshape(-1, K)[ok], pv[ok], V), TopK(q[1].reshape(-1, K)[ok], qv[ok], V))


def do_bounds(n: int) -> dict[str, Any]:
    """acceptance_bounds on n truncated top-20 rows (iid n = 4) and n / 8 (wor n = 4), in calls of
    log_report's BOUNDS_ROWS rows, as the report makes them: positions per CPU-second."""
    from mdsd_fast import TopK, acceptance_bounds
    from mdsd_fast.report.logs import BOUNDS_ROWS

    tp, tq = truncated_topk(n)
    res: dict[str, Any] = dict(step="bounds", positions=n, chunk=BOUNDS_ROWS)
    for scheme, count in (("iid", n), ("wor", max(BOUNDS_ROWS, n // 8))):
        t0 = time.process_time()
        width = []
        for a in range(0, count, BOUNDS_ROWS):
            sl = slice(a, min(a + BOUNDS_ROWS, count))
            lo, hi = acceptance_bounds(
                TopK(tp.ids[sl], tp.values[sl], V), TopK(tq.ids[sl], tq.values[sl], V), 4, scheme
            )
            width.append(hi - lo)
        dt = time.process_time() - t0
        res[scheme] = dict(
            positions=count, cpu_s=dt, pos_per_cpu_s=count / dt, mean_width=float(np.concatenate(width).mean())
        )
    return res


def do_wor_bounds(n: int) -> dict[str, Any]:
    """acceptance_bounds on n truncated top-20 rows, "wor" n = 4 and 2 and "iid" n = 4 (the control),
    in calls of 16 rows: positions per CPU-second of each (run it under two builds to compare them)."""
    from mdsd_fast import TopK, acceptance_bounds

    tp, tq = truncated_topk(n)
    res: dict[str, Any] = dict(step="wor_bounds", positions=n)
    for scheme, k in (("wor", 4), ("wor", 2), ("iid", 4)):
        t0 = time.process_time()
        width = []
        for a in range(0, n, 16):
            sl = slice(a, a + 16)
            lo, hi = acceptance_bounds(
                TopK(tp.ids[sl], tp.values[sl], V), TopK(tq.ids[sl], tq.values[sl], V), k, scheme
            )
            width.append(hi - lo)
        dt = time.process_time() - t0
        res[f"{scheme}{k}"] = dict(pos_per_cpu_s=n / dt, mean_width=float(np.concatenate(width).mean()))
    return res


def package_at(ref: str, dest: Path) -> str:
    """The package's Python sources at git ref ``ref``, with the C++ extension this run imports
    (python-only changes), unpacked under dest: a PYTHONPATH for "before" measurements."""
    import mdsd_fast

    repo = Path(__file__).resolve().parents[2]
    dest.mkdir(parents=True)
    tar = subprocess.run(["git", "-C", str(repo), "archive", ref, "python"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=tar, check=True)
    for so in Path(mdsd_fast.__file__).parent.glob("_core*"):
        (dest / "python" / "mdsd_fast" / so.name).write_bytes(so.read_bytes())
    return str(dest / "python")


def do_openai(out: str, n: int) -> dict[str, Any]:
    from mdsd_fast.logs.convert import from_openai_jsonl

    rng = np.random.default_rng(1)
    per = 64
    t_path, d_path = Path(out + "_t.jsonl"), Path(out + "_d.jsonl")
    with open(t_path, "w") as ft, open(d_path, "w") as fd:
        for line in range(math.ceil(n / per)):
            lp = rng.standard_normal((per, CANDIDATES)) * 3.0
            lq = lp + 2.0 * rng.standard_normal((per, CANDIDATES))
            for fh, lg, model in ((ft, lp, "target"), (fd, lq, "draft")):
                lg = lg - np.log(np.exp(lg).sum(axis=1, keepdims=True) * 1.05)  # 5% unseen
                content = []
                for j in range(per):
                    top = np.argsort(-lg[j])[:K]
                    tops = [dict(token=f"t{c}", logprob=float(lg[j, c]), bytes=list(f"t{c}".encode())) for c in top]
                    tok = f"t{int(np.argmax(lp[j]))}"
                    content.append(
                        dict(
                            token=tok,
                            logprob=float(lg[j, int(np.argmax(lp[j]))]),
                            bytes=list(tok.encode()),
                            top_logprobs=tops,
                        )
                    )
                fh.write(
                    json.dumps(
                        dict(id=f"r{line}", model=model, choices=[dict(index=0, logprobs=dict(content=content))])
                    )
                    + "\n"
                )
    t0 = time.perf_counter()
    from_openai_jsonl(t_path, d_path, out, vocab_size=V)
    dt = time.perf_counter() - t0
    mb = (t_path.stat().st_size + d_path.stat().st_size) / 2**20
    return dict(step="convert-openai", positions=n, pos_per_s=n / dt, jsonl_mb=mb)


def do_dataset(out: str) -> dict[str, Any]:
    import mdsd_fast as mf
    from mdsd_fast.logs.convert import from_dataset

    t0 = time.perf_counter()
    ds = mf.load_dataset()
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    from_dataset(ds, out)
    dt = time.perf_counter() - t0
    size = sum(f.stat().st_size for f in Path(out).glob("shard-*.parquet"))
    return dict(step="convert-dataset", positions=len(ds), pos_per_s=len(ds) / dt, load_s=t_load, mb=size / 2**20)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--positions", type=int, default=1_000_000)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--out", default="/tmp/bench_logs")
    ap.add_argument("--reuse", action="store_true", help="only the report steps, on the log already in --out")
    ap.add_argument(
        "--before",
        default=None,
        metavar="REF",
        help="also run the truncated steps with the package's Python sources at git ref REF (before/after)",
    )
    ap.add_argument("--truncated-only", action="store_true", help="only the truncated steps")
    ap.add_argument("--step", nargs="*", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.step is not None:  # one measurement, in this (fresh) process
        kind, *rest = a.step
        fn: dict[str, Any] = dict(
            truncated=do_truncated,
            bounds=do_bounds,
            wor_bounds=do_wor_bounds,
            write=do_write,
            npz=do_npz,
            read=do_read,
            report=do_report,
            openai=do_openai,
            dataset=do_dataset,
        )
        conv = [int(x) if x.isdigit() else x for x in rest]
        res = fn[kind](*conv)
        res["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        res["peak_worker_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        res["cpu_s"] = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime  # all processes of the step
        if "positions" in res:
            res["pos_per_cpu_s"] = res["positions"] / res["cpu_s"]
        print(json.dumps(res))
        return 0
    root = Path(a.out)
    if root.exists() and not a.reuse:
        raise SystemExit(f"{root} exists: give a new --out")
    N = a.positions
    log = str(root / "log")
    results = []
    if a.truncated_only:
        for tag, path in (("before", package_at(a.before, root / "before") if a.before else None), ("after", None)):
            if tag == "before" and path is None:
                continue
            for args in (
                ["truncated", str(root / f"truncated_{tag}"), "64"],
                ["bounds", "2048" if tag == "after" else "256"],
            ):
                results.append(dict(step(args, path), version=tag))
        (root / "results_truncated.json").write_text(json.dumps(results, indent=1))
        return 0
    if not a.reuse:
        results += [step(["write", log, str(N)]), step(["read", log])]
        results.append(step(["npz", str(root / "cols.npz"), str(min(N, 100_000))]))
    for n in (N // 10, N):
        for w in (int(x) for x in a.workers.split(",")):
            results.append(step(["report", log, str(n), str(w)]))
    results.append(step(["truncated", str(root / f"truncated{int(a.reuse)}"), "64"]))
    if not a.reuse:
        results.append(step(["openai", str(root / "openai"), str(min(N, 50_000))]))
        results.append(step(["dataset", str(root / "flat")]))
    (root / ("results_reuse.json" if a.reuse else "results.json")).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
