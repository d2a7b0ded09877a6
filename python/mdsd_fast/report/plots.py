"""PNG plots of a gap report (matplotlib, the ``plot`` extra; imported only when plotting).

Each figure answers one question, its title, and says which data it pools. Every verifier has the
same colour in every figure (``_render.colour``), α* is black, legends sit outside the data, and a
verifier shown under a scheme it does not draft for (sd under topk) is drawn hollow and labelled a
reference. The figures read with one scheme or one n; the temperature figure is drawn only with at
least :data:`MIN_TEMPERATURES` temperatures (two give a segment per series, nothing to read).
"""

from __future__ import annotations

import textwrap
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._files import atomic_write
from .._render import colour, pyplot
from ..inputs.rules import scheme_family
from .config import _VERIFIER_SCHEMES
from .table import TIE, TIE_TEXT

if TYPE_CHECKING:  # pragma: no cover
    from .gap import GapReport

__all__ = ["QUESTIONS", "MIN_TEMPERATURES", "make_plots"]

#: file -> the question the figure answers (its title; report.md's heading above it)
QUESTIONS = {
    "acceptance_vs_n.png": "How close does each verifier come to α* as the number of drafts n grows?",
    "gap_per_verifier.png": "How far below α* of its own scheme is each verifier, on average?",
    "wor_minus_iid.png": "How much does drafting without replacement gain over i.i.d. drafts, position by position?",
    "acceptance_vs_temperature.png": "How does α* change with the temperature?",
}
MIN_TEMPERATURES = 3
#: the smallest α*_wor − α*_iid the log-scale figure resolves; smaller gains count as none
SMALLEST_GAIN = 1e-6
_SCHEME_COLOURS = ("black", "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def _own(method: str, scheme: str) -> bool:
    """Whether ``method`` drafts as ``scheme`` does (else the report lists it there as a reference)."""
    return scheme_family(scheme) in _VERIFIER_SCHEMES.get(method, ())


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


def _title(fig: Any, question: str, pools: str, width_in: float) -> None:
    chars = max(40, int(width_in * 12))  # ~12 characters per inch at 10 pt: no clipped title
    fig.suptitle("\n".join(textwrap.wrap(question, chars) + textwrap.wrap(pools, int(chars * 1.15))), fontsize=10)


def _save(plt: Any, fig: Any, f: Path, files: list[str]) -> None:
    atomic_write(f, lambda fh: fig.savefig(fh, dpi=110, format="png"))
    plt.close(fig)
    files.append(str(f))


def _legend(fig: Any, axes: Any) -> None:
    """One legend for the figure, right of the panels, each label once."""
    seen: dict[str, Any] = {}
    for ax in np.ravel(axes):
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(lab, h)
    if seen:
        fig.legend(list(seen.values()), list(seen), loc="outside right center", fontsize=8, frameon=False)


def make_plots(rep: GapReport, out_dir: Path) -> list[str]:
    """Draw the figures of ``rep`` into ``out_dir``; returns the files written."""
    plt = pyplot(out_dir)
    recs = [r for r in rep.records if r["domain"] != "all"]  # the pooled rows would count twice
    order = ["iid", "wor", "greedy", "topk"]  # then mixed schemes by name
    schemes = sorted({r["scheme"] for r in recs}, key=lambda s: (order.index(s) if s in order else len(order), s))
    files: list[str] = []
    if not schemes:
        return files
    _acceptance_vs_n(plt, recs, schemes, out_dir, files)
    _gap_per_verifier(plt, recs, out_dir, files)
    if rep.positions and "iid" in schemes and "wor" in schemes:
        _wor_minus_iid(plt, rep.positions, sorted({r["n"] for r in recs}), out_dir, files)
    temps = sorted({r["temperature"] for r in recs if r["temperature"] is not None})
    if len(temps) >= MIN_TEMPERATURES:
        _acceptance_vs_temperature(plt, recs, schemes, temps, out_dir, files)
    return files


def _acceptance_vs_n(plt: Any, recs: list[dict[str, Any]], schemes: list[str], out_dir: Path, files: list[str]) -> None:
    drafts = sorted({r["draft"] for r in recs})
    methods = list(dict.fromkeys(r["method"] for r in recs if r["kind"] == "verifier"))
    ns = sorted({r["n"] for r in recs})
    pooled = _pooled(recs, ("draft", "scheme", "method", "n"))
    width = 2.9 * len(schemes) + 2.2
    fig, axes = plt.subplots(
        len(drafts), len(schemes), figsize=(width, 2.4 * len(drafts) + 1.0), squeeze=False, sharex=True,
        layout="constrained",
    )  # fmt: skip
    for i, d in enumerate(drafts):
        for j, s in enumerate(schemes):
            ax = axes[i][j]
            xs = [n for n in ns if (d, s, "alpha*", n) in pooled]
            ax.plot(
                xs, [pooled[(d, s, "alpha*", n)] for n in xs], "k-s", lw=2.2, ms=7, label="α* of the column's scheme"
            )
            for m in methods:
                xv = [n for n in ns if (d, s, m, n) in pooled]
                if not xv:
                    continue
                ys = [pooled[(d, s, m, n)] for n in xv]
                if _own(m, s):
                    ax.plot(xv, ys, "o--", ms=4, lw=1.2, color=colour(m), label=m)
                else:  # drawn from q, not from the column's drafts: a reference point, not under the bound
                    ax.plot(xv, ys, "D", ms=6, mfc="none", color=colour(m), label=f"{m}: reference (other drafts)")
            ax.set_title(f"{d}, {s} drafts", fontsize=9)
            ax.set_xticks(ns)
            ax.set_xlim(min(ns) - 0.5, max(ns) + 0.5)
            ax.grid(alpha=0.3)
            if i == len(drafts) - 1:
                ax.set_xlabel("drafts n")
            if j == 0:
                ax.set_ylabel("acceptance")
    _legend(fig, axes)
    pools = "mean acceptance over positions, pooled over domains and temperatures; one panel per draft and scheme"
    _title(fig, QUESTIONS["acceptance_vs_n.png"], pools, width)
    _save(plt, fig, out_dir / "acceptance_vs_n.png", files)


def _gap_per_verifier(plt: Any, recs: list[dict[str, Any]], out_dir: Path, files: list[str]) -> None:
    num: dict[tuple[str, str, int], float] = defaultdict(float)
    den: dict[tuple[str, str, int], float] = defaultdict(float)
    simulated: set[tuple[str, str]] = set()
    for r in recs:  # each verifier under the schemes it drafts for: its gap is to its own bound
        if r["kind"] == "verifier" and _own(r["method"], r["scheme"]) and r["gap_abs"] is not None:
            if np.isfinite(r["gap_abs"]):
                num[(r["method"], r["scheme"], r["n"])] += r["gap_abs"] * r["positions"]
                den[(r["method"], r["scheme"], r["n"])] += r["positions"]
                if not r["exact"]:
                    simulated.add((r["method"], r["scheme"]))
    gap = {k: num[k] / den[k] for k in num if den[k] > 0}
    series = list(dict.fromkeys((m, s) for m, s, _ in gap))
    flat = [(m, s) for m, s in series if all(abs(g) <= TIE for (mm, ss, _), g in gap.items() if (mm, ss) == (m, s))]
    at = [m for m, _ in flat]
    series = [ms for ms in series if ms not in flat]
    ns = sorted({n for m, s, n in gap if (m, s) in series})
    fig, ax = plt.subplots(figsize=(8.0, 4.0), layout="constrained")
    width = 0.8 / max(1, len(series))
    hatches: dict[str, int] = defaultdict(int)
    for k, (m, s) in enumerate(series):
        hatch = ("", "//", "..", "xx")[min(hatches[m], 3)]
        hatches[m] += 1
        star = "*" if (m, s) in simulated else ""
        vals = [gap.get((m, s, n), np.nan) for n in ns]
        ax.bar(np.arange(len(ns)) + k * width, vals, width, color=colour(m), hatch=hatch, label=f"{m}{star} ({s})")
    ax.set_xticks(np.arange(len(ns)) + width * (len(series) - 1) / 2, [f"n = {n}" for n in ns])
    ax.set_ylabel("mean gap α* − acceptance")
    ax.axhline(0, color="k", lw=0.8)
    ax.grid(axis="y", alpha=0.3)
    if series:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False, title="verifier (scheme)")
    note = f"at α* at every n (|gap| ≤ {TIE_TEXT}), no bar: " + (", ".join(dict.fromkeys(at)) if at else "none")
    if simulated:
        note += "; * = simulated at some n"
    ax.text(0, -0.16, "\n".join(textwrap.wrap(note, 100)), transform=ax.transAxes, fontsize=8, va="top")
    pools = "position-weighted mean over drafts, temperatures and domains; gap = α* − acceptance (> 0: below)"
    _title(fig, QUESTIONS["gap_per_verifier.png"], pools, 8.0)
    _save(plt, fig, out_dir / "gap_per_verifier.png", files)


def _wor_minus_iid(
    plt: Any, positions: dict[str, dict[str, Any]], ns: list[int], out_dir: Path, files: list[str]
) -> None:
    fig, ax = plt.subplots(figsize=(8.0, 4.6), layout="constrained")
    grid = np.logspace(np.log10(SMALLEST_GAIN), 0, 400)
    lows, count = [], 0
    cmap = plt.get_cmap("viridis")
    big = [n for n in ns if n >= 2]
    for k, n in enumerate(big):
        parts = [a[f"alpha/wor/{n}"] - a[f"alpha/iid/{n}"] for a in positions.values() if f"alpha/wor/{n}" in a]
        d = np.concatenate(parts) if parts else np.zeros(0)
        d = d[np.isfinite(d)]
        if not d.size:
            continue
        lows.append(float(d.min()))
        count = max(count, d.size)
        share = (d[None, :] > grid[:, None]).mean(axis=1)  # positions gaining more than x
        none = float(np.mean(d <= SMALLEST_GAIN))
        label = f"n = {n}: mean gain {d.mean():+.4f}; {none:.0%} of positions gain ≤ 1e-6"
        ax.step(grid, share, where="post", lw=1.6, color=cmap(k / max(1, len(big) - 1) * 0.85), label=label)
    ax.set_xscale("log")
    ax.set_xlabel("gain x = α*_wor − α*_iid at a position (log scale)")
    ax.set_ylabel("share of positions gaining more than x")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.2), fontsize=8, frameon=False)
    low = min(lows, default=0.0)
    verdict = "no position loses" if low >= -TIE else f"the worst position loses {-low:.1e}"
    pools = (
        f"{count} positions per n, pooled over drafts, temperatures and domains; smallest gain {low:+.1e}: {verdict}"
    )
    _title(fig, QUESTIONS["wor_minus_iid.png"], pools, 8.0)
    _save(plt, fig, out_dir / "wor_minus_iid.png", files)


def _acceptance_vs_temperature(
    plt: Any, recs: list[dict[str, Any]], schemes: list[str], temps: list[float], out_dir: Path, files: list[str]
) -> None:
    drafts = sorted({r["draft"] for r in recs})
    nmax = max(r["n"] for r in recs)
    pt = _pooled([r for r in recs if r["n"] == nmax and r["method"] == "alpha*"], ("draft", "scheme", "temperature"))
    width = 3.0 * len(drafts) + 1.8
    fig, axes = plt.subplots(1, len(drafts), figsize=(width, 3.4), squeeze=False, sharey=True, layout="constrained")
    for i, d in enumerate(drafts):
        ax = axes[0][i]
        for k, s in enumerate(schemes):
            ys = [pt.get((d, s, t), np.nan) for t in temps]
            ax.plot(temps, ys, "o-", ms=4, color=_SCHEME_COLOURS[k % len(_SCHEME_COLOURS)], label=f"α*_{s}")
        ax.set_title(d, fontsize=9)
        ax.set_xlabel("temperature T")
        ax.grid(alpha=0.3)
        if i == 0:
            ax.set_ylabel(f"α* at n = {nmax}")
    _legend(fig, axes)
    pools = f"mean α* over positions at n = {nmax}, pooled over domains; one panel per draft"
    _title(fig, QUESTIONS["acceptance_vs_temperature.png"], pools, width)
    _save(plt, fig, out_dir / "acceptance_vs_temperature.png", files)
