"""The gap report's output on the command line: report.csv / .json / .md (and plots) in --out, and
the legend, tables and findings on stdout (every line at most 100 columns), for the dense report and
the streaming log report alike."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from .._files import atomic_write
from .._render import wrap
from .._version import __version__

__all__ = ["print_report"]


def print_report(rep: Any, args: argparse.Namespace, cfg: Any, t0: float) -> int:
    """Write report.csv/json/md (and the plots) to --out and print the legend, tables and findings."""
    from ..report.log_summary import interval_markdown
    from ..report.plots import QUESTIONS
    from ..report.table import legend, legend_entries

    out = Path(args.out)
    rep.to_csv(out / "report.csv")
    rep.to_json(out / "report.json")
    pooled = any(r["domain"] == "all" for r in rep.records)
    md = rep.markdown(max_rows=args.max_rows, domain="all" if pooled else None)
    full_md = rep.markdown()
    findings = rep.findings_markdown()
    intervals = interval_markdown(rep.records)
    if intervals:  # truncated log rows: alpha* is an interval there (docs/guide/intervals.md)
        full_md += "\n\nTruncated positions (top-k logs): mean interval ends\n\n" + intervals
        md += "\n\nTruncated positions (top-k logs): mean interval ends\n\n" + interval_markdown(
            rep.records, domain="all" if pooled else None
        )
    plots: list[str] = []
    no_plots = ""
    if not args.no_plots:
        try:
            plots = rep.plot(out)
        except ImportError as exc:
            no_plots = f"(no plots: {exc})"
    positions = sum(
        r["positions"]
        for r in rep.records
        if r["method"] == "alpha*" and r["domain"] != "all" and r["n"] == cfg.ns[0] and r["scheme"] == cfg.schemes[0]
    )
    title = f"mdsd_fast {__version__} gap report: {rep.metadata['units']} groups, {positions} positions"
    keys = "\n".join(f"- {e}" for e in legend_entries(cfg.gamma, cfg.samples))  # every domain's rows: not pooled
    figures = [f"### {QUESTIONS.get(Path(f).name, Path(f).stem)}\n\n![{Path(f).stem}]({Path(f).name})" for f in plots]
    atomic_write(
        out / "report.md",
        f"# {title}\n\n## Legend\n\n{keys}\n\n## Tables\n\n{full_md}\n\n## Findings\n\n{findings}\n"
        + ("\n## Plots\n\n" + "\n\n".join(figures) + "\n" if figures else ""),
    )
    print(title)
    print("\n".join(legend(cfg.gamma, cfg.samples, pooled)) + "\n")
    print(md)
    print("\nFindings on this data:\n")
    print(findings or "(none: no check applies to these schemes and verifiers)")
    if plots:
        print("\n" + "\n".join(wrap(f"plots in {out}: " + ", ".join(Path(f).name for f in plots), indent="  ")))
    elif no_plots:
        print("\n" + "\n".join(wrap(no_plots)))
    done = f"files in {out}: report.md, report.csv, report.json; {time.perf_counter() - t0:.1f} s"
    print("\n" + "\n".join(wrap(done, indent="  ")))
    return 0
