"""The whole benchmark suite in one command (about 5-10 minutes on 2 cores).

Run:  python bench/run_all.py [--out bench/results]

Runs bound/dual_vs_argsort.py, bound/optimal_plan_vs_peers.py, verifiers/simulation_throughput.py
and verifiers/optimal_prepare.py one after the other (each prints its tables; the machine info is
printed first) and writes each one's JSON to --out/<room>/<script>.json. OR-Tools runs in a
subprocess of bound/optimal_plan_vs_peers.py because it cannot share a process with highspy.
Install the peers first:  pip install ortools scipy networkx
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--quick", action="store_true", help="fewer repeats (for a smoke run)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rep = ["--repeats", "5"] if args.quick else []
    runs = [
        ("bound/dual_vs_argsort.py", rep + (["--batch", "32"] if args.quick else [])),
        ("bound/optimal_plan_vs_peers.py", ["--repeats", "1" if args.quick else "3"]),
        ("verifiers/simulation_throughput.py", ["--samples", "200000" if args.quick else "2000000", "--repeats", "2"]),
        ("verifiers/optimal_prepare.py", ["--repeats", "3" if args.quick else "9"]),
    ]
    t0 = time.perf_counter()
    for script, extra in runs:
        out = os.path.join(args.out, script.replace(".py", ".json"))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        print(f"\n## {script}\n", flush=True)
        cmd = [sys.executable, os.path.join(HERE, script), *extra, "--json", out]
        rc = subprocess.call(cmd)
        if rc != 0:
            print(f"{script} failed with exit code {rc}", file=sys.stderr)
            return rc
    print(f"\nsuite finished in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
