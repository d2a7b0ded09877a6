"""The whole benchmark suite in one command (about 5-10 minutes on 2 cores).

Run:  python bench/run_all.py [--out bench/results]

Runs bench_dual.py, bench_flow.py, bench_verifiers.py and bench_optimal.py one after the other (each prints its
tables; the machine info is printed first) and writes their JSON next to each other in --out.
OR-Tools runs in a subprocess of bench_flow.py because it cannot share a process with highspy.
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
        ("bench_dual.py", rep + (["--batch", "32"] if args.quick else [])),
        ("bench_flow.py", ["--repeats", "1" if args.quick else "3"]),
        ("bench_verifiers.py", ["--samples", "200000" if args.quick else "2000000", "--repeats", "2"]),
        ("bench_optimal.py", ["--repeats", "3" if args.quick else "9"]),
    ]
    t0 = time.perf_counter()
    for script, extra in runs:
        name = script.replace("bench_", "").replace(".py", "")
        print(f"\n## {script}\n", flush=True)
        cmd = [sys.executable, os.path.join(HERE, script), *extra, "--json", os.path.join(args.out, f"{name}.json")]
        rc = subprocess.call(cmd)
        if rc != 0:
            print(f"{script} failed with exit code {rc}", file=sys.stderr)
            return rc
    print(f"\nsuite finished in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
