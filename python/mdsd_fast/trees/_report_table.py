"""The tree report's terminal table and plots (matplotlib only when plotting). The printed intervals are
clipped to [1, depth + 1], the range of tokens per call; the CSV keeps the t interval as computed. The
last column is the mean interval holding the root's acceptance on the uncut rows (trees/_cut.py)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._files import atomic_write
from .._render import colour, pyplot, split_table, wrap

if TYPE_CHECKING:  # pragma: no cover
    from .report import TreeReport


def _fin(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def _tpc(r: dict[str, Any]) -> str:
    if r["verifier"] == "bound" and _fin(r["bound_low"]) and not _fin(r["tokens_per_call"]):
        lo, hi = max(r["ci_low"], 1.0), min(r["ci_high"], r["depth"] + 1.0)
        return f"[{r['bound_low']:.3f}, {r['bound_high']:.3f}] ({lo:.3f}–{hi:.3f})"
    if not _fin(r["tokens_per_call"]):
        return "n/a"
    if not (_fin(r["ci_low"]) and _fin(r["ci_high"])):
        return f"{r['tokens_per_call']:.3f}"
    lo, hi = max(r["ci_low"], 1.0), min(r["ci_high"], r["depth"] + 1.0)  # 1 <= tokens per call <= depth + 1
    return f"{r['tokens_per_call']:.3f} ({lo:.3f}–{hi:.3f})"


def _note(text: str) -> str:
    """A refusal's message without the argument names it passed through ("trees: scheme: ...")."""
    return re.sub(r"(refused on \d+ of \d+ trees: )(?:[a-z_]+: )+", r"\1", text)


def markdown(records: Sequence[dict[str, Any]], profiles: Sequence[dict[str, Any]]) -> str:
    """One row per (shape, verifier): tokens per call (95 % CI; the bound as [low, high]), the chain
    formula and its error, the per-depth profile P(accepted >= d) and the root's acceptance on the
    uncut rows; a table wider than 100 columns continues in a second one (shape and verifier
    repeated); notes for rows without a value, wrapped at 100 columns."""
    prof: dict[tuple[str, str], list[str]] = {}
    for p in sorted(profiles, key=lambda p: p["depth"]):
        prof.setdefault((p["shape"], p["verifier"]), []).append(f"{p['p_accepted_ge']:.2f}")
    header = ["shape", "verifier", "scheme", "trees", "tokens/call (95% CI)", "chain formula",
              "P(acc >= d), d = 1..", "root acc. (uncut rows)"]  # fmt: skip
    rows, notes = [], []
    for r in records:
        chain = f"{r['chain_formula']:.3f} ({r['chain_error']:+.3f})" if _fin(r["chain_error"]) else ""
        lo, hi = r.get("root_uncut_low", math.nan), r.get("root_uncut_high", math.nan)
        uncut = f"[{lo:.3f}, {hi:.3f}]" if _fin(lo) and _fin(hi) else ""
        rows.append([r["shape"], r["verifier"], r["scheme"], str(r["trees"]), _tpc(r), chain,
                     " ".join(prof.get((r["shape"], r["verifier"]), [])), uncut])  # fmt: skip
        if r["note"] and not _fin(r["tokens_per_call"]) and r["verifier"] != "bound":
            notes += wrap(f"- {r['shape']} {r['verifier']}: {_note(r['note'])}", indent="  ")
    lines = []
    for t in split_table(header, rows, {3}, keys=2):
        lines += [*t, ""]
    return "\n".join(lines + notes).rstrip("\n")


def plots(rep: TreeReport, out_dir: Path) -> list[str]:
    plt = pyplot(out_dir)
    shapes = list(dict.fromkeys(r["shape"] for r in rep.records))
    files = []
    fig, axes = plt.subplots(1, len(shapes), figsize=(2.6 * len(shapes), 3.4), squeeze=False)
    for ax, s in zip(axes[0], shapes, strict=True):
        recs = [r for r in rep.records if r["shape"] == s]
        vals = [r for r in recs if _fin(r["tokens_per_call"]) and r["verifier"] != "bound"]
        ax.bar(range(len(vals)), [r["tokens_per_call"] for r in vals],
               yerr=[[r["tokens_per_call"] - r["ci_low"] for r in vals], [r["ci_high"] - r["tokens_per_call"] for r in vals]],
               color=[colour(r["verifier"]) for r in vals], capsize=2)  # fmt: skip
        b = next((r for r in recs if r["verifier"] == "bound" and _fin(r["bound_low"])), None)
        if b is not None:
            ax.axhspan(b["bound_low"], b["bound_high"], color="0.85", zorder=0, label="tree bound")
        ax.set_xticks(range(len(vals)), [r["verifier"] for r in vals], rotation=60, fontsize=7)
        ax.set_title(s, fontsize=9)
    axes[0][0].set_ylabel("tokens per target call")
    fig.tight_layout()
    atomic_write(out_dir / "trees.png", lambda fh: fig.savefig(fh, dpi=110, format="png"))
    plt.close(fig)
    files.append(str(out_dir / "trees.png"))
    fig, axes = plt.subplots(1, len(shapes), figsize=(2.6 * len(shapes), 3.2), squeeze=False, sharey=True)
    for ax, s in zip(axes[0], shapes, strict=True):
        names = list(dict.fromkeys(p["verifier"] for p in rep.profiles if p["shape"] == s))
        for n in names:
            rows = sorted((p for p in rep.profiles if p["shape"] == s and p["verifier"] == n), key=lambda p: p["depth"])
            ax.plot([p["depth"] for p in rows], [p["p_accepted_ge"] for p in rows], "o-", ms=3, label=n,
                    color=colour(n))  # fmt: skip
        ax.set_title(s, fontsize=9)
        ax.set_xlabel("depth d")
    axes[0][0].set_ylabel("P(accepted >= d)")
    seen: dict[str, Any] = {}
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(lab, h)
    fig.tight_layout(rect=(0, 0, 0.94, 1))
    fig.legend(list(seen.values()), list(seen), loc="center right", fontsize=7, frameon=False)
    atomic_write(out_dir / "trees_profile.png", lambda fh: fig.savefig(fh, dpi=110, format="png"))
    plt.close(fig)
    files.append(str(out_dir / "trees_profile.png"))
    return files
