"""`import mdsd_fast` against `import numpy`, cold, side by side.

Run:  python bench/package/import_time.py [--rounds 30] [--out bench/results/package/import_time.json]

Each round starts two fresh interpreters, one running ``import numpy`` and one ``import
mdsd_fast`` (which imports numpy itself), in alternating order, and times each with
``time.process_time`` read inside the child around the import (the CPU the import costs;
interpreter start-up is the same for both and left out). The ratio is the median over rounds of
mdsd_fast / numpy. The target (bench/README.md): at most 1.2.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

CHILD = "import time; t0 = time.process_time(); import {mod}; print(time.process_time() - t0)"


def one(mod: str) -> float:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c", CHILD.format(mod=mod)], capture_output=True, text=True, env=env)
    if out.returncode:
        raise SystemExit(out.stderr)
    return float(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    one("numpy"), one("mdsd_fast")  # warm the page cache and the bytecode caches
    ratios, tn, tm = [], [], []
    for i in range(a.rounds):
        if i % 2:
            m, n = one("mdsd_fast"), one("numpy")
        else:
            n, m = one("numpy"), one("mdsd_fast")
        tn.append(n)
        tm.append(m)
        ratios.append(m / n)
    res = {
        "ratio_median": float(np.median(ratios)),
        "ratio_p90": float(np.quantile(ratios, 0.9)),
        "numpy_s": float(np.median(tn)),
        "mdsd_fast_s": float(np.median(tm)),
        "rounds": a.rounds,
        "load": Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else [],
        "target": 1.2,
    }
    print(
        f"import mdsd_fast / import numpy: {res['ratio_median']:.2f}x (p90 {res['ratio_p90']:.2f}x; "
        f"{res['mdsd_fast_s'] * 1e3:.0f} ms / {res['numpy_s'] * 1e3:.0f} ms CPU, {a.rounds} rounds)"
    )
    if a.out:
        import platform

        res.update(
            title="import mdsd_fast against import numpy",
            command=f"python bench/package/import_time.py --rounds {a.rounds} --out {a.out}",
            machine=f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average "
            f"{' '.join(res['load'])}; CPU time of the import in fresh interpreters",
            tables=[
                {
                    "columns": ["ratio (median)", "ratio (p90)", "import mdsd_fast ms", "import numpy ms", "target"],
                    "rows": [
                        [
                            f"{res['ratio_median']:.2f}",
                            f"{res['ratio_p90']:.2f}",
                            f"{res['mdsd_fast_s'] * 1e3:.0f}",
                            f"{res['numpy_s'] * 1e3:.0f}",
                            "≤ 1.2",
                        ]
                    ],
                }
            ],
        )
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(res, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
