"""Write docs/performance.md from the measured runs in bench/results/.

Run:  python bench/performance.py [--check]

Two kinds of result file: a run's own JSON (written by a script's ``--json``; rendered here by a
function that knows its rows) and a table file (``{"title", "command", "machine", "note",
"tables": [{"columns", "rows"}]}``) holding the tables a script printed. ``--check`` exits 1 when
docs/performance.md is not what this script writes (a stale page).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"
PAGE = BENCH.parent / "docs" / "performance.md"
ZEN = "2-core AMD EPYC VM (L1d 32 KiB, L2 512 KiB per core, L3 32 MiB)"
# The order of the page, and how to reproduce the run files (the table files carry their own).
SECTIONS: list[tuple[str, str, str, str]] = [
    ("builds/roofline_single_row.json", "α* kernels against the memory-stream floor and numpy.argsort",
     "python bench/builds/roofline.py --repeats 15 --batch 256", ""),
    ("builds/isa_side_by_side.json", "", "", ""),
    ("bound/optimal_plan_vs_peers.json", "", "", ""),
    ("verifiers/simulation_throughput.json", "", "", ""),
    ("verifiers/one_call.json", "", "", ""),
    ("package/import_time.json", "", "", ""),
    ("verifiers/one_tuple_per_row.json", "", "", ""),
    ("verifiers/optimal_wor_route.json", "", "", ""),
    ("verifiers/lifted_exact.json", "", "", ""),
    ("intervals/bounds_throughput.json", "", "", ""),
    ("engines/rejection_sample_speed.json", "", "", ""),
    ("logs/stream_positions_200k_idle.jsonl", "Logs: 200,000 top-20 positions written, read and reported (idle cores)",
     "python bench/logs/stream_positions.py --positions 200000 --workers 1,2", ZEN + ", idle"),
    ("logs/stream_positions_1m.json", "Logs: the report over a million positions (memory stays flat)",
     "python bench/logs/stream_positions.py --positions 1000000 --reuse", ZEN + ", shared (load 6-9): read CPU-seconds"),
    ("report/gap_report.json", "", "", ""),
    ("trees/tree_values_shipped.json", "Exact tree values on the shipped SmolLM2 trees (compact rows), one core",
     "python bench/trees/tree_values_shipped.py --json bench/results/trees/tree_values_shipped.json",
     ZEN + ", shared (load ~6): rates within a factor of ~2"),
    ("data/cost_by_vocabulary.json", "Cost per position at V = 262,144 (Gemma-3-270M) beside V = 49,152 (SmolLM2-135M)",
     "python bench/data/cost_by_vocabulary.py --gemma-full FILE --rows 12", ZEN + ", shared (load 5-10): read the ratios"),
]  # fmt: skip


def table(columns: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    return out + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]


def us(s: float) -> str:
    return f"{s * 1e6:,.0f}" if s >= 1e-4 else f"{s * 1e6:.1f}"


def roofline(d: dict[str, Any]) -> tuple[str, list[str]]:
    m = d["machine"]
    machine = f"{m['cpu']}, {m['cores']} cores ({m['caches']}); {m['timing']}; Python {m['python']}, numpy {m['numpy']}"
    single = [r for r in d["rows"] if "scheme" in r]
    rows = [
        [f"{r['V']:,}", r["scheme"], r["n"], us(r["kernel_s"]), us(r["floor_s"]), us(r["argsort_s"]),
         f"{r['kernel_s'] / r['floor_s']:.1f}", f"{r['kernel_s'] / r['argsort_s']:.2f}"]
        for r in single
    ]  # fmt: skip
    out = [
        "One row, one thread, `_core.bound.dual_batch` on a validated LLM-like row. The floor is `np.copyto` of p and q "
        "(the same bytes read once); goals: α* iid ≤ 0.5x argsort and ≤ 4x the floor, wor n = 4 and 8 ≤ 3x argsort.",
        "",
        *table(["V", "scheme", "n", "kernel µs", "floor µs", "argsort µs", "/ floor", "/ argsort"], rows),
        "",
        "A batch of B = 256 rows, iid n = 4, one thread against two (goal: the kernel ≥ 1.8x at V = 49,152; "
        "on idle cores 9 of 11 runs reach it, 1.65-2.27x; the copy of the same bytes scales 1.1-1.6x):",
        "",
    ]
    batch = [
        [f"{r['B']} x {r['V']:,}", r["route"], f"{r['one_thread_s']:.4f}", f"{r['two_threads_s']:.4f}", f"{r['speedup']:.2f}x"]
        for r in d["rows"] if "B" in r
    ]  # fmt: skip
    return machine, out + table(["batch", "route", "1 thread s", "2 threads s", "speed-up"], batch)


def log_steps(steps: list[dict[str, Any]], report_only: bool) -> list[str]:
    rows = []
    for s in steps:
        k = s["step"]
        if k == "report":
            rate = f"{s['positions'] / s['seconds']:,.0f} / s wall" + (
                f", {s['pos_per_cpu_s']:,.0f} / CPU-s" if "pos_per_cpu_s" in s else ""
            )
            rss = f"{s['peak_rss_mb']:.0f}" + (f" + {s['peak_worker_rss_mb']:.0f}" if s["peak_worker_rss_mb"] else "")
            rows.append(
                [f"report, {s['workers']} worker(s)", f"{s['positions']:,}", f"{s['seconds']:.1f} s", rate, rss]
            )
        elif report_only or k == "report-truncated":
            continue  # truncated rows: see the intervals table (the route has changed since this run)
        elif k in ("write", "read"):
            rate = s[f"{k}_pos_per_s"]
            rows.append(
                [
                    k + (" (Parquet, zstd)" if k == "write" else " (iter_chunks)"),
                    f"{s['positions']:,}",
                    "",
                    f"{rate:,.0f} / s",
                    f"{s['peak_rss_mb']:.0f}",
                ]
            )
        elif k == "npz":
            rows.append(
                [
                    "one LZMA .npz (write / read)",
                    f"{s['positions']:,}",
                    "",
                    f"{s['write_pos_per_s']:,.0f} / {s['read_pos_per_s']:,.0f} per s",
                    f"{s['peak_rss_mb']:.0f}",
                ]
            )
        else:
            rows.append(
                [
                    k.replace("-", " "),
                    f"{s['positions']:,}",
                    "",
                    f"{s['pos_per_s']:,.0f} / s",
                    f"{s['peak_rss_mb']:.0f}",
                ]
            )
    return table(["step", "positions", "wall", "rate", "peak RSS MB"], rows)  # fmt: skip


def trees(d: dict[str, Any]) -> list[str]:
    rows = [
        [r["shape"], f"{r['nodes']:.0f}", f"{r['V']:.0f}", r["verifier"], f"{r['trees_per_s']:,.1f}", r["note"]]
        for r in d["rows"]
    ]
    return table(["shape", "nodes (mean)", "V (mean)", "verifier", "trees / s", "note"], rows)  # fmt: skip


def vocab(d: list[dict[str, Any]]) -> list[str]:
    def mp(v: list[float]) -> str:
        return f"{v[0]:,.1f} ({v[1]:,.0f})"

    rows = [
        [r["data"], f"{r['V']:,}", f"{r['support p50']:,}", mp(r["alpha iid n=4"]), mp(r["alpha wor n=4"]),
         mp(r["optimal iid n=4"]), mp(r["sweep wor n=4"]), f"{r['report per position']:,.0f}"]
        for r in d
    ]  # fmt: skip
    cols = [
        "data",
        "V",
        "support p50",
        "α* iid n=4",
        "α* wor n=4",
        "optimal iid prepare",
        "sweep wor prepare",
        "report / position",
    ]
    return [
        "Median ms per row (p90 in brackets), one thread; the report column is ms of wall time per position.",
        "",
        *table(cols, rows),
    ]


def section(rel: str, title: str, command: str, machine: str) -> list[str]:
    path = RESULTS / rel
    if rel.endswith(".jsonl"):
        body = log_steps([json.loads(line) for line in path.read_text().splitlines() if line.strip()], False)
    else:
        d = json.loads(path.read_text())
        if "tables" in d:
            title, command, machine = d["title"], d["command"], d["machine"]
            body = [d["note"], ""] if d.get("note") else []
            for t in d["tables"]:
                body += ([t["title"] + ":", ""] if "title" in t else []) + table(t["columns"], t["rows"]) + [""]
        elif rel.startswith("builds/roofline"):
            machine, body = roofline(d)
        elif rel.startswith("logs/"):
            body = log_steps(d["report_rerun_with_cpu_time"], True)
        elif rel.startswith("trees/"):
            body = trees(d)
        else:
            body = vocab(d)
    head = [
        f"## {title}",
        "",
        f"Reproduce: `{command}`",
        "",
        f"Machine: {machine}.",
        "",
        f"Data: `bench/results/{rel}`.",
        "",
    ]
    return head + body + ([""] if body and body[-1] else [])


def page() -> str:
    out = [
        "# Performance",
        "",
        "<!-- Generated by `python bench/performance.py` from bench/results/: edit those, not this page. -->",
        "",
        "Today's measured numbers, one table per benchmark. Speed claims are ratios taken side by side in one run "
        "(a kernel against `numpy.argsort` or the time to copy its input, one build against another), because the "
        "machines are shared and their speed drifts; single times are for scale. Most runs used thread CPU time "
        "and the best of several calls for that reason. `bench/README.md` says what each folder measures; "
        "the [design notes](design/index.md) say why the routes are what they are.",
        "",
    ]
    for rel, title, command, machine in SECTIONS:
        out += section(rel, title, command, machine)
    return "\n".join(out).rstrip() + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="exit 1 if docs/performance.md is stale")
    text = page()
    if ap.parse_args().check:
        same = PAGE.exists() and PAGE.read_text() == text
        print("docs/performance.md is up to date" if same else "docs/performance.md is stale: run bench/performance.py")
        return 0 if same else 1
    PAGE.write_text(text)
    print(f"wrote {PAGE.relative_to(BENCH.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
