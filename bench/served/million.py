"""1,000,000 served positions through the check: time and peak memory, against 100,000.

Run:  python bench/served/million.py [--positions 1000000] [--workers 2] [--dir /tmp/served_million]

Writes a lossless served log (vLLM's rejection sampler on SmolLM2-135M, responses of 64 tokens,
top_logprobs 20) of ``--positions`` positions and one of a tenth of that, then checks each in a
fresh process with ``--workers`` workers: wall time, CPU time, positions per second and the peak
RSS of the process (VmHWM) and of its largest worker (getrusage of the children). This script never
imports the package: on Linux getrusage's peak survives exec, so a large parent would inflate it.
Memory is bounded by the unit (an 8 MiB byte range of the file), not by the log: the two peaks
should match.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def check(path: Path, workers: int) -> dict[str, object]:
    code = (
        "import json, resource, sys, time\n"
        "from mdsd_fast.served import check_served\n"
        "t = time.perf_counter(); c0 = time.process_time()\n"
        f"r = check_served({str(path)!r}, workers={workers})\n"
        "w = time.perf_counter() - t\n"
        "kids = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "me = resource.getrusage(resource.RUSAGE_SELF)\n"
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
        "print(json.dumps(dict(positions=r.positions, pvalue=r.pvalue, lossless=r.lossless,\n"
        "  tv_detectable=r.tv_detectable, wall_s=w, cpu_s=me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,\n"
        "  rss_mib=int(hwm) / 1024, worker_rss_mib=kids.ru_maxrss / 1024, positions_per_s=r.positions / w)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--positions", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--dir", default="/tmp/served_million")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results" / "served"))
    args = ap.parse_args()
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    runs = []
    for n in (args.positions // 10, args.positions):
        path = d / f"served_{n}.jsonl"
        t0, made = time.perf_counter(), not path.exists()
        if made:
            gen_code = (
                "from mdsd_fast.served import generate_served\n"
                f"generate_served({str(path)!r}, 'vllm', responses={n // 50}, length=50, seed=7)\n"
            )
            subprocess.run([sys.executable, "-c", gen_code], check=True)
        gen = time.perf_counter() - t0
        r = check(path, args.workers)
        r.update(file_mib=path.stat().st_size / 2**20, generate_s=gen if made else None, workers=args.workers)
        runs.append(r)
        print(json.dumps(r))
    out = dict(command=" ".join([Path(sys.argv[0]).name, *sys.argv[1:]]), runs=runs)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "million.json").write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
