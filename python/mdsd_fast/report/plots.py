"""PNG plots of a gap report (matplotlib, the ``plot`` extra; imported only when plotting)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._files import atomic_write
from .._render import pyplot

if TYPE_CHECKING:  # pragma: no cover
    from .gap import GapReport


def _pooled(records: list[dict[str, Any]], key_fields: tuple[str, ...]) -> dict[tuple[Any, ...], float]:
    """Position-weighted mean of ``mean`` over the records sharing ``key_fields``."""
    num: dict[tuple[Any, ...], float] = defaultdict(float)
    den: dict[tuple[Any, ...], float] = defaultdict(float)
    for r in records:
        if r["mean"] is None or not np.isfinite(r["mean"]):
            continue
        k = tuple(r[f] for f in key_fields)
        num[k] += r["mean"] * r["positions"]
        den[k] += r["positions"]
    return {k: num[k] / den[k] for k in num if den[k] > 0}


def make_plots(rep: GapReport, out_dir: Path) -> list[str]:
    plt = pyplot(out_dir)
    recs = [r for r in rep.records if r["domain"] != "all"]  # the pooled rows would count twice
    order = ["iid", "wor", "greedy", "topk"]  # then mixed schemes by name
    schemes = sorted({r["scheme"] for r in recs}, key=lambda s: (order.index(s) if s in order else len(order), s))
    drafts = sorted({r["draft"] for r in recs})
    methods = list(dict.fromkeys(r["method"] for r in recs if r["kind"] == "verifier"))
    ns = sorted({r["n"] for r in recs})
    files = []

    # 1. acceptance vs n, per draft (rows) and scheme (columns): the bound and the verifiers under it
    pooled = _pooled(recs, ("draft", "scheme", "method", "n"))
    fig, axes = plt.subplots(
        len(drafts), len(schemes), figsize=(4.2 * len(schemes), 3.2 * len(drafts)), squeeze=False, sharex=True
    )
    for i, d in enumerate(drafts):
        for j, s in enumerate(schemes):
            ax = axes[i][j]
            xs = [n for n in ns if (d, s, "alpha*", n) in pooled]
            ax.plot(xs, [pooled[(d, s, "alpha*", n)] for n in xs], "k-", lw=2.5, label=f"α*_{s}")
            for m in methods:
                xv = [n for n in ns if (d, s, m, n) in pooled]
                if xv:
                    ax.plot(xv, [pooled[(d, s, m, n)] for n in xv], "o--", ms=4, label=m)
            ax.set_title(f"{d}, {s} drafts", fontsize=9)
            ax.set_xticks(ns)
            ax.grid(alpha=0.3)
            if i == len(drafts) - 1:
                ax.set_xlabel("drafts n")
            if j == 0:
                ax.set_ylabel("acceptance")
            ax.legend(fontsize=7)
    fig.suptitle("Acceptance vs number of drafts: verifiers under the bound α*", fontsize=11)
    fig.tight_layout()
    f = out_dir / "acceptance_vs_n.png"
    atomic_write(f, lambda fh: fig.savefig(fh, dpi=110, format="png"))
    plt.close(fig)
    files.append(str(f))

    # 2. gap per verifier (pooled over everything), per n
    gaps: dict[tuple[Any, ...], list[float]] = defaultdict(list)
    for r in recs:
        if r["kind"] == "verifier" and r["gap_abs"] is not None and np.isfinite(r["gap_abs"]):
            gaps[(r["method"], r["n"])].extend([r["gap_abs"]] * r["positions"])
    fig, ax = plt.subplots(figsize=(7, 3.6))
    width = 0.8 / max(1, len(ns))
    for k, n in enumerate(ns):
        vals = [float(np.mean(gaps[(m, n)])) if gaps[(m, n)] else np.nan for m in methods]
        ax.bar(np.arange(len(methods)) + k * width, vals, width, label=f"n={n}")
    ax.set_xticks(np.arange(len(methods)) + width * (len(ns) - 1) / 2)
    ax.set_xticklabels(methods)
    ax.set_ylabel("α* − acceptance (mean)")
    ax.set_title("Gap to the bound of each verifier's draft scheme")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    f = out_dir / "gap_per_verifier.png"
    atomic_write(f, lambda fh: fig.savefig(fh, dpi=110, format="png"))
    plt.close(fig)
    files.append(str(f))

    # 3. alpha*_wor - alpha*_iid across positions
    if rep.positions and "iid" in schemes and "wor" in schemes:
        fig, ax = plt.subplots(figsize=(7, 3.6))
        for n in ns:
            if n < 2:
                continue
            parts = [a[f"alpha/wor/{n}"] - a[f"alpha/iid/{n}"] for a in rep.positions.values() if f"alpha/wor/{n}" in a]
            d = np.concatenate(parts) if parts else np.zeros(0)
            d = d[np.isfinite(d)]
            if d.size:
                ax.hist(d, bins=40, histtype="step", lw=1.5, label=f"n={n} (mean {d.mean():+.4f})")
        ax.axvline(0, color="k", lw=0.8)
        ax.set_xlabel("α*_wor − α*_iid at a position")
        ax.set_ylabel("positions")
        ax.set_title("Drafting without replacement never loses to i.i.d. drafting")
        ax.legend(fontsize=8)
        fig.tight_layout()
        f = out_dir / "wor_minus_iid.png"
        atomic_write(f, lambda fh: fig.savefig(fh, dpi=110, format="png"))
        plt.close(fig)
        files.append(str(f))

    # 4. acceptance vs temperature (largest n), per draft
    temps = sorted({r["temperature"] for r in recs if r["temperature"] is not None})
    if len(temps) > 1:
        nmax = max(ns)
        pt = _pooled([r for r in recs if r["n"] == nmax], ("draft", "scheme", "method", "temperature"))
        fig, axes = plt.subplots(1, len(drafts), figsize=(4.2 * len(drafts), 3.4), squeeze=False)
        for i, d in enumerate(drafts):
            ax = axes[0][i]
            for s in schemes:
                ys = [pt.get((d, s, "alpha*", t), np.nan) for t in temps]
                ax.plot(temps, ys, "-", lw=2, label=f"α*_{s}")
            for m in methods:
                for s in schemes:
                    ys = [pt.get((d, s, m, t), np.nan) for t in temps]
                    if np.isfinite(ys).any():
                        ax.plot(temps, ys, "o--", ms=4, label=f"{m} ({s})")
            ax.set_title(f"{d}, n = {nmax}", fontsize=9)
            ax.set_xlabel("temperature")
            ax.set_xticks(temps)
            ax.grid(alpha=0.3)
            if i == 0:
                ax.set_ylabel("acceptance")
            ax.legend(fontsize=6)
        fig.tight_layout()
        f = out_dir / "acceptance_vs_temperature.png"
        atomic_write(f, lambda fh: fig.savefig(fh, dpi=110, format="png"))
        plt.close(fig)
        files.append(str(f))
    return files
