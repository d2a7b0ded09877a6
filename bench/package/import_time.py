"""`import mdsd_fast` against `import numpy`, cold, side by side.

Run:  python bench/package/import_time.py [--rounds 30] [--out bench/results/package/import_time.json]

Each round starts two fresh interpreters, one running ``import numpy`` and one ``import
mdsd_fast`` (which imports numpy itself), in alternating order, and times each with
``time.process_time`` read inside the child around the import (the CPU the import costs;
interpreter start-up is the same for both and left out). The ratio is the median over rounds of
mdsd_fast / numpy. The target (bench/README.md): at most 1.2.

The target row imports both packages from bytecode, as installed packages do (pip compiles it at
install): the children keep their bytecode in a private folder (``PYTHONPYCACHEPREFIX``), written
by a warm-up import, so that neither the caller's ``PYTHONDONTWRITEBYTECODE`` nor a checkout
without ``__pycache__`` makes one side compile its sources on every run and the other not. A
second row, in the same rounds, has mdsd_fast compile its own sources on every import (numpy and
the standard library still from bytecode): what a checkout run without bytecode pays.
``python -X importtime -c "import numpy; import mdsd_fast"`` shows where the time goes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

CHILD = "import time; t0 = time.process_time(); import {mod}; print(time.process_time() - t0)"


def one(mod: str, env: dict[str, str]) -> float:
    out = subprocess.run([sys.executable, "-c", CHILD.format(mod=mod)], capture_output=True, text=True, env=env)
    if out.returncode:
        raise SystemExit(out.stderr)
    return float(out.stdout)


def envs(cached: str, others: str) -> tuple[dict[str, str], dict[str, str]]:
    """The children's environments: every module from bytecode in ``cached``; in ``others`` every
    module but mdsd_fast's own, which compile on every import."""
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    bytecode = {**base, "PYTHONPYCACHEPREFIX": cached}
    one("numpy", bytecode), one("mdsd_fast", bytecode)  # warm the page cache and write the bytecode
    where = "import os, mdsd_fast; print(os.path.dirname(os.path.abspath(mdsd_fast.__file__)))"
    pkg = subprocess.run([sys.executable, "-c", where], capture_output=True, text=True, env=bytecode, check=True)
    shutil.copytree(cached, others)
    shutil.rmtree(Path(others) / pkg.stdout.strip().lstrip(os.sep))  # the prefix mirrors absolute paths
    return bytecode, {**base, "PYTHONPYCACHEPREFIX": others, "PYTHONDONTWRITEBYTECODE": "1"}


def summary(tn: list[float], tm: list[float]) -> dict[str, float]:
    ratios = np.array(tm) / np.array(tn)
    return {
        "ratio_median": float(np.median(ratios)),
        "ratio_p90": float(np.quantile(ratios, 0.9)),
        "numpy_s": float(np.median(tn)),
        "mdsd_fast_s": float(np.median(tm)),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    tn, tm, tn_src, tm_src = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="mdsd-import-time-") as tmp:
        bytecode, source = envs(str(Path(tmp) / "all"), str(Path(tmp) / "others"))
        for i in range(a.rounds):  # the two sides take turns, in alternating order
            for env, n_out, m_out in ((bytecode, tn, tm), (source, tn_src, tm_src)):
                if i % 2:
                    m_out.append(one("mdsd_fast", env))
                    n_out.append(one("numpy", env))
                else:
                    n_out.append(one("numpy", env))
                    m_out.append(one("mdsd_fast", env))
    res: dict[str, Any] = {
        **summary(tn, tm),
        "rounds": a.rounds,
        "load": Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else [],
        "target": 1.2,
        "source": summary(tn_src, tm_src),
    }
    rows = [("from bytecode (installed)", res, "≤ 1.2"), ("compiled from source on each import", res["source"], "")]
    for label, r, _ in rows:
        print(
            f"import mdsd_fast / import numpy, mdsd_fast {label}: {r['ratio_median']:.2f}x (p90 {r['ratio_p90']:.2f}x; "
            f"{r['mdsd_fast_s'] * 1e3:.0f} ms / {r['numpy_s'] * 1e3:.0f} ms CPU, {a.rounds} rounds)"
        )
    if a.out:
        import platform

        res.update(
            title="import mdsd_fast against import numpy",
            command=f"python bench/package/import_time.py --rounds {a.rounds} --out {a.out}",
            machine=f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average "
            f"{' '.join(res['load'])}; CPU time of the import in fresh interpreters",
            note="numpy and the standard library import from bytecode in both rows; "
            '`python -X importtime -c "import numpy; import mdsd_fast"` shows where the time goes.',
            tables=[
                {
                    "columns": [
                        "mdsd_fast's modules",
                        "ratio (median)",
                        "ratio (p90)",
                        "import mdsd_fast ms",
                        "import numpy ms",
                        "target",
                    ],
                    "rows": [
                        [
                            label,
                            f"{r['ratio_median']:.2f}",
                            f"{r['ratio_p90']:.2f}",
                            f"{r['mdsd_fast_s'] * 1e3:.0f}",
                            f"{r['numpy_s'] * 1e3:.0f}",
                            target,
                        ]
                        for label, r, target in rows
                    ],
                }
            ],
        )
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(res, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
