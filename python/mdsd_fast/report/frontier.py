"""The lossy frontier: acceptance gained against distance from the target paid, for the engines'
lossy rules, beside lossless verifiers and alpha* at n = 1..max_n on the same positions.

Every value is exact per position (``mdsd_fast.lossy.evaluate_rows``, ``verifiers.acceptance``,
``bound.optimal_acceptance``); the tables give the mean over positions with its standard error.
The finding: for each lossy setting, the smallest n at which alpha* (the best any lossless
verifier can do with n i.i.d. drafts) and at which each lossless verifier reach its acceptance.
"""

from __future__ import annotations

import csv
import io
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._render import pipe_table, pyplot
from ..bound.alpha import optimal_acceptance
from ..data import load_dataset
from ..lossy import evaluate_rows
from ..verifiers.run import VerifierName, acceptance

__all__ = ["SETTINGS", "LOSSLESS", "Frontier", "frontier"]

#: The lossy settings drawn: (rule, settings, n, drafts). "top": the draft's most likely tokens
#: (how SGLang's and TensorRT-LLM's drafters pick them), "sample": one draft x ~ q. The engines'
#: defaults, a few looser settings, and SGLang's lossless (1, 1) as its own reference.
SETTINGS: tuple[tuple[str, dict[str, Any], int, str], ...] = (
    ("sglang", {"threshold_single": 1.0, "threshold_acc": 1.0}, 1, "top"),
    ("sglang", {"threshold_single": 1.0, "threshold_acc": 0.8}, 1, "top"),
    ("sglang", {"threshold_single": 1.0, "threshold_acc": 0.5}, 1, "top"),
    ("sglang", {"threshold_single": 0.3, "threshold_acc": 0.8}, 1, "top"),
    ("sglang", {"threshold_single": 1.0, "threshold_acc": 0.5}, 1, "sample"),
    ("sglang", {"threshold_single": 1.0, "threshold_acc": 1.0}, 4, "top"),
    ("sglang", {"threshold_single": 1.0, "threshold_acc": 0.5}, 4, "top"),
    ("typical", {"posterior_threshold": 0.09, "posterior_alpha": 0.3}, 1, "sample"),
    ("typical", {"posterior_threshold": 0.09, "posterior_alpha": 0.3}, 1, "top"),
    ("typical", {"posterior_threshold": 0.3, "posterior_alpha": 0.55}, 1, "sample"),
    ("entropy", {"posterior_threshold": 0.95, "posterior_alpha": 0.4}, 1, "sample"),
    ("entropy", {"posterior_threshold": 0.9, "posterior_alpha": 1.0}, 1, "sample"),
    ("relaxed", {"relaxed_topk": 1, "relaxed_delta": 0.0}, 1, "top"),
    ("relaxed", {"relaxed_topk": 10, "relaxed_delta": 0.6}, 1, "top"),
    ("relaxed", {"relaxed_topk": 10, "relaxed_delta": 0.6}, 1, "sample"),
)
#: Lossless verifiers drawn at every n (i.i.d. drafts, exact acceptance at any n).
LOSSLESS: tuple[VerifierName, ...] = ("rrs", "kseq")
#: alpha* of each draft scheme drawn: "iid" (n drafts x ~ q, as "sample") and "topk" (the top n
#: of q, as "top": the best any lossless verifier does with the drafts SGLang's tree verifies).
BOUNDS: dict[str, str] = {"alpha*": "iid", "alpha*-top": "topk"}
FIELDS = ("kind", "name", "setting", "n", "positions", "acceptance", "acceptance_se", "tv", "tv_se", "kl")


def _label(rule: str, settings: dict[str, Any], n: int, drafts: str) -> str:
    return rule + " " + " ".join(f"{k}={v:g}" for k, v in settings.items()) + f" {drafts} n={n}"


@dataclass
class Frontier:
    """Records (one per lossy setting and per lossless verifier or alpha* at each n) and findings."""

    records: list[dict[str, Any]]
    findings: list[dict[str, Any]]
    metadata: dict[str, Any] = field(default_factory=dict)

    def csv(self) -> str:
        """The records as CSV (columns ``FIELDS``)."""
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
        w.writeheader()
        for r in self.records:
            w.writerow({k: (f"{r[k]:.10g}" if isinstance(r[k], float) else r[k]) for k in FIELDS})
        return buf.getvalue()

    def markdown(self) -> str:
        """The findings as a pipe table: each lossy setting, what it pays, the n that matches it."""
        header = ["lossy setting", "acceptance", "TV", "KL (nats)", "alpha* reaches it at n", "alpha*-top", *LOSSLESS]
        rows = [
            [
                f["setting"],
                f"{f['acceptance']:.4f}",
                f"{f['tv']:.4f}",
                f"{f['kl']:.4f}",
                _n_text(f["n_alpha*"], self.metadata["max_n"]),
                _n_text(f["n_alpha*-top"], self.metadata["max_n"]),
                *(_n_text(f[f"n_{v}"], self.metadata["max_n"]) for v in LOSSLESS),
            ]
            for f in self.findings
        ]
        return "\n".join(pipe_table(header, rows, right=set(range(1, len(header)))))

    def write(self, out_dir: str | os.PathLike[str], *, plot: bool = True) -> list[str]:
        """Write ``frontier.csv``, ``frontier.md`` and (``plot``) ``frontier.png``; returns the paths."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        files = [_atomic_text(out / "frontier.csv", self.csv()), _atomic_text(out / "frontier.md", self.markdown())]
        if plot:
            files.append(self.plot(out / "frontier.png"))
        return files

    def plot(self, path: str | os.PathLike[str]) -> str:
        """The frontier figure: acceptance against TV per lossy setting, alpha*(n) and the
        lossless verifiers as levels at TV = 0."""
        path = Path(path)
        plt = pyplot(path.parent)
        fig, ax = plt.subplots(figsize=(8.5, 5.5))
        markers = {"sglang": "o", "typical": "s", "entropy": "^", "relaxed": "D"}
        for rule, m in markers.items():
            pts = [r for r in self.records if r["kind"] == "lossy" and r["name"] == rule]
            if pts:
                ax.scatter([r["tv"] for r in pts], [r["acceptance"] for r in pts], marker=m, s=45, label=rule, zorder=3)
                for r in pts:
                    text = (
                        ",".join(w.split("=")[1] for w in r["setting"].split()[1:-2]) + " " + r["setting"].split()[-2]
                    )
                    text += f" n={r['n']}" if r["n"] > 1 else ""
                    ax.annotate(text, (r["tv"], r["acceptance"]), fontsize=6, xytext=(4, 2), textcoords="offset points")
        top_n = self.metadata["max_n"]
        for r in (r for r in self.records if r["name"] == "alpha*"):  # the bound of n i.i.d. drafts
            ax.axhline(r["acceptance"], color="0.6", lw=0.7, ls="--", zorder=1)
            ax.annotate(
                f"α* n={r['n']}",
                (1, r["acceptance"]),
                xycoords=("axes fraction", "data"),
                fontsize=7,
                xytext=(-2, 1),
                textcoords="offset points",
                ha="right",
                color="0.35",
            )
        levels: tuple[tuple[str, str, str], ...] = (
            ("alpha*-top", "tab:purple", f"α* of the top-n drafts, n=1..{top_n}"),
        )
        levels += tuple((v, c, f"{v}, n=1..{top_n}") for v, c in zip(LOSSLESS, ("tab:gray", "tab:brown"), strict=False))
        for name, c, label in levels:
            pts = [r for r in self.records if r["name"] == name]
            ax.scatter([0] * len(pts), [r["acceptance"] for r in pts], marker="_", s=150, color=c, label=label)
        ax.set_xlabel("total variation from the target (mean over positions)")
        ax.set_ylabel("acceptance (mean over positions)")
        meta = self.metadata
        ax.set_title(
            f"Lossy rules vs lossless verifiers: {meta['positions']} positions of {meta['source']}", fontsize=10
        )
        ax.set_xlim(left=-0.06 * max([r["tv"] for r in self.records] + [0.1]))
        ax.legend(fontsize=7, loc="lower left", bbox_to_anchor=(0.55, 0.42))  # the empty middle right
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".png")
        os.close(fd)
        fig.savefig(tmp, dpi=120)
        plt.close(fig)
        return _publish(tmp, path)


def _n_text(n: int | None, max_n: int) -> str:
    return f"> {max_n}" if n is None else str(n)


def _publish(tmp: str, path: Path) -> str:
    """Give ``tmp`` (mkstemp makes it 0600) the mode a new file gets, then move it over ``path``."""
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(tmp, 0o666 & ~mask)
    os.replace(tmp, path)
    return str(path)


def _atomic_text(path: Path, text: str) -> str:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    return _publish(tmp, path)


def _alpha_star(p: np.ndarray, q: np.ndarray, n: int, scheme: str) -> np.ndarray:
    """alpha* per row; "topk" drafts at most the tokens with q > 0 (as lossy.rules.draft_order)."""
    if scheme != "topk":
        return np.asarray(optimal_acceptance(p, q, n, scheme), dtype=np.float64)
    m = np.minimum((q > 0).sum(axis=1), n)
    out = np.empty(p.shape[0])
    for k in np.unique(m):
        rows = np.flatnonzero(m == k)
        out[rows] = optimal_acceptance(p[rows], q[rows], int(k), scheme)
    return out


def _record(
    kind: str, name: str, setting: str, n: int, acc: np.ndarray, tv: np.ndarray, kl: np.ndarray
) -> dict[str, Any]:
    B = acc.size

    def se(x: np.ndarray) -> float:
        return float(x.std(ddof=1) / np.sqrt(B)) if B > 1 else 0.0

    return {
        "kind": kind, "name": name, "setting": setting, "n": n, "positions": B,
        "acceptance": float(acc.mean()), "acceptance_se": se(acc),
        "tv": float(tv.mean()), "tv_se": se(tv), "kl": float(kl.mean()),
    }  # fmt: skip


def frontier(
    dataset: Any = None,
    *,
    limit: int | None = None,
    max_n: int = 8,
    settings: Sequence[tuple[str, dict[str, Any], int, str]] = SETTINGS,
    chunk: int = 32,
    progress: Callable[[str], None] | None = None,
) -> Frontier:
    """Compute the frontier on the rows of a dataset (default: the shipped SmolLM2 sample).

    Parameters
    ----------
    dataset : an ``LMDataset``, a dataset path, or None (the shipped sample).
    limit : use only the first ``limit`` rows.
    max_n : lossless verifiers and alpha* at n = 1..max_n (1 <= max_n <= 32).
    settings : (rule, settings, n, drafts) of the lossy rules (``mdsd_fast.lossy.evaluate_rows``).
    chunk : rows read and computed at a time (memory: a few (chunk, V) float64 arrays).
    progress : called with a line of progress text per chunk (default: stderr when a terminal).
    """
    if not isinstance(max_n, int) or isinstance(max_n, bool) or not 1 <= max_n <= 32:
        raise ValueError(f"max_n: expected an integer in [1, 32], got {max_n!r}")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise ValueError(f"limit: expected a positive integer, got {limit!r}")
    if not isinstance(chunk, int) or isinstance(chunk, bool) or not 1 <= chunk <= 4096:
        raise ValueError(f"chunk: expected an integer in [1, 4096], got {chunk!r}")
    t0 = time.time()
    ds = load_dataset() if dataset is None else (dataset if hasattr(dataset, "iter_chunks") else load_dataset(dataset))
    source = "the shipped sample" if dataset is None else str(getattr(dataset, "path", dataset))
    if limit is not None:
        ds = ds[: min(limit, len(ds))]
    if progress is None:
        progress = (lambda s: print(s, file=sys.stderr, flush=True)) if sys.stderr.isatty() else (lambda s: None)
    lossy_vals: list[list[np.ndarray]] = [[] for _ in settings]
    lossless: dict[tuple[str, int], list[np.ndarray]] = {}
    done = 0
    for ch in ds.iter_chunks(chunk, renormalize=True):
        p, q = ch.p, ch.q
        for k, (rule, st, n_l, drafts) in enumerate(settings):
            rows = evaluate_rows(rule, p, q, n_l, drafts=drafts, **st)
            lossy_vals[k].append(np.stack([rows.acceptance, rows.tv, rows.kl]))
        for n in range(1, max_n + 1):
            for bound, scheme in BOUNDS.items():
                lossless.setdefault((bound, n), []).append(_alpha_star(p, q, n, scheme))
            for v in LOSSLESS:
                lossless.setdefault((v, n), []).append(np.asarray(acceptance(v, p, q, n), dtype=np.float64))
        done += p.shape[0]
        progress(f"frontier: {done}/{len(ds)} positions ({time.time() - t0:.0f} s)")
    if done == 0:
        raise ValueError("dataset: no rows to compute the frontier on")
    records = []
    for (rule, st, n_l, drafts), vals in zip(settings, lossy_vals, strict=True):
        a, tv, kl = np.concatenate(vals, axis=1)
        records.append(_record("lossy", rule, _label(rule, st, n_l, drafts), n_l, a, tv, kl))
    zeros = np.zeros(done)
    for (name, n), vals in lossless.items():
        kind = "alpha*" if name in BOUNDS else "lossless"
        records.append(_record(kind, name, name, n, np.concatenate(vals), zeros, zeros))
    findings = []
    for r in (r for r in records if r["kind"] == "lossy"):
        f = {k: r[k] for k in ("setting", "n", "acceptance", "tv", "kl")}
        for name in (*BOUNDS, *LOSSLESS):
            ns = sorted(x["n"] for x in records if x["name"] == name and x["acceptance"] >= r["acceptance"])
            f[f"n_{name}"] = ns[0] if ns else None
        findings.append(f)
    meta = {"positions": done, "source": source, "max_n": max_n, "seconds": round(time.time() - t0, 1)}
    return Frontier(records, findings, meta)
