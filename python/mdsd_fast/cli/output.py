"""The gap report's output on the command line: report.csv / .json / .md (and plots) in --out, and
the tables and findings on stdout, for the dense report and the streaming log report alike."""

from __future__ import annotations

import argparse
import time
from typing import Any

from .._files import atomic_write
from .._version import __version__

__all__ = ["print_report"]


def print_report(rep: Any, args: argparse.Namespace, cfg: Any, t0: float) -> int:
    """Write report.csv/json/md (and the plots) to --out and print the tables and findings."""
    from pathlib import Path

    from ..report.log_summary import interval_markdown

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
    atomic_write(out / "report.md", f"# mdsd_fast gap report\n\n{full_md}\n\n## Findings\n\n{findings}\n")
    print(
        f"mdsd_fast {__version__} gap report: {rep.metadata['units']} groups, "
        f"{sum(r['positions'] for r in rep.records if r['method'] == 'alpha*' and r['domain'] != 'all' and r['n'] == cfg.ns[0] and r['scheme'] == cfg.schemes[0])} positions"
    )
    print(
        "alpha* mean (95% CI over positions, clipped to [0, 1]); each verifier's acceptance (its difference to "
        f"alpha* of its scheme; * = simulated); tok/call = expected tokens per target call at gamma = {cfg.gamma}"
        + ("; pooled over domains (per-domain rows in report.md/csv/json)" if pooled else "")
        + "\n"
    )
    print(md)
    print("\nFindings on this data:\n")
    print(findings)
    if not args.no_plots:
        try:
            files = rep.plot(out)
            print("\nplots: " + ", ".join(files))
        except ImportError as exc:
            print(f"\n(no plots: {exc})")
    print(
        f"\nfiles: {out / 'report.md'}, {out / 'report.csv'}, {out / 'report.json'}; {time.perf_counter() - t0:.1f} s"
    )
    return 0
