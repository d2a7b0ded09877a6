"""--resume reuses a shard only for the same data, config and code; progress lines on stderr.

A shard used to be reused when its file name (dataset file stem, domain, temperature, draft) and
config fingerprint matched, so a rerun on swapped --arrays (copied to <out>/arrays/p.npy, q.npy
under the same names) or on a dataset file of the same name in another folder returned the old
numbers. The shard now stores a hash of the data it read, of the config and of the code.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mdsd_fast.report.config as report_config
from mdsd_fast.data import DatasetBuilder
from mdsd_fast.report import GapReport, ReportConfig, gap_report

CFG = ReportConfig(schemes=("iid", "wor"), ns=(1, 2), verifiers=("sd", "rrs"), samples=200, seed=3, threads=1)
GROUPS = 8  # 2 domains x 2 temperatures x 2 drafts in tiny_dataset


def rand_arrays(B: int, V: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.full(V, 0.3), size=B), rng.dirichlet(np.full(V, 0.3), size=B)


def tiny_dataset(path: Path, seed: int, rows: int = 3, V: int = 60) -> Path:
    """A dataset file of 2 domains x 2 temperatures x 2 drafts, ``rows`` contexts per domain."""
    rng = np.random.default_rng(seed)
    b = DatasetBuilder(V, ["d1", "d2"])
    for dom in ("chat", "code"):
        for k in range(rows):
            for t in (0.5, 1.0):
                b.add(
                    rng.dirichlet(np.full(V, 0.5)),
                    rng.dirichlet(np.full(V, 0.5), size=2),
                    prompt_id=f"{dom}{k}",
                    domain=dom,
                    temperature=t,
                    position=k,
                )
    path.parent.mkdir(parents=True, exist_ok=True)
    b.build().save(path)
    return path


def numbers(rep: GapReport) -> str:
    """The records in a canonical text form (NaN == NaN)."""
    key = ("domain", "temperature", "draft", "scheme", "n", "method")
    recs = sorted(rep.records, key=lambda r: json.dumps([r[k] for k in key], default=str))
    return json.dumps(recs, sort_keys=True, default=float)


def resume_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.startswith("resume:")]
    assert len(lines) == 1, err
    return lines[0]


def test_resume_recomputes_swapped_arrays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p1, q1 = rand_arrays(4, 80, 1)
    out = tmp_path / "out"
    first = gap_report((p1, q1), config=CFG, out_dir=out, resume=True, progress=False)
    assert resume_line(capsys.readouterr().err) == "resume: reused 0 of 1 groups (1 recomputed: no shard for 1)"
    # same out_dir, p and q swapped: the same file names under <out>/arrays
    swapped = gap_report((q1, p1), config=CFG, out_dir=out, resume=True, progress=False)
    assert resume_line(capsys.readouterr().err) == "resume: reused 0 of 1 groups (1 recomputed: data changed for 1)"
    assert swapped.metadata["units_reused"] == 0 and swapped.metadata["units_computed"] == 1
    fresh = gap_report((q1, p1), config=CFG, out_dir=tmp_path / "fresh", progress=False)
    assert numbers(swapped) == numbers(fresh)
    assert numbers(swapped) != numbers(first)
    # other arrays with more rows: the position count follows the new data
    p2, q2 = rand_arrays(7, 80, 2)
    more = gap_report((p2, q2), config=CFG, out_dir=out, resume=True, progress=False)
    capsys.readouterr()
    assert {r["positions"] for r in more.records if r["method"] == "alpha*"} == {7}
    assert numbers(more) == numbers(gap_report((p2, q2), config=CFG, out_dir=tmp_path / "fresh2", progress=False))
    # without resume, back to the first arrays in the same out_dir: the process must not serve
    # the arrays it loaded last time from the same path
    back = gap_report((p1, q1), config=CFG, out_dir=out, progress=False)
    assert numbers(back) == numbers(first)


def test_resume_same_file_name_other_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = tiny_dataset(tmp_path / "a" / "data.npz", seed=1, rows=3)
    b = tiny_dataset(tmp_path / "b" / "data.npz", seed=2, rows=4)
    out = tmp_path / "out"
    ra = gap_report(a, config=CFG, out_dir=out, resume=True, progress=False)
    capsys.readouterr()
    rb = gap_report(b, config=CFG, out_dir=out, resume=True, progress=False)
    assert resume_line(capsys.readouterr().err).startswith(f"resume: reused 0 of {GROUPS} groups ({GROUPS} recomputed")
    fresh_b = gap_report(b, config=CFG, out_dir=tmp_path / "fresh", progress=False)
    assert numbers(rb) == numbers(fresh_b) != numbers(ra)
    assert {r["positions"] for r in rb.records if r["method"] == "alpha*" and r["domain"] != "all"} == {4}
    # the file at a/ rewritten in place with b's content: its shards are stale, by content
    shutil.copyfile(b, a)
    ra2 = gap_report(a, config=CFG, out_dir=out, resume=True, progress=False)
    assert resume_line(capsys.readouterr().err) == (
        f"resume: reused 0 of {GROUPS} groups ({GROUPS} recomputed: data changed for {GROUPS})"
    )
    assert numbers(ra2) == numbers(fresh_b)
    # both files in one run: one shard each, no overwriting
    tiny_dataset(a, seed=1, rows=3)
    both = gap_report([a, b], config=CFG, out_dir=tmp_path / "both", progress=False)
    assert len(both.positions) == 2 * GROUPS
    assert len(list((tmp_path / "both" / "shards").glob("*.npz"))) == 2 * GROUPS
    per_file = [r for r in both.records if r["domain"] != "all"]
    expect = [r for rep in (ra, rb) for r in rep.records if r["domain"] != "all"]
    canon = lambda rs: sorted(json.dumps(r, sort_keys=True, default=float) for r in rs)  # noqa: E731
    assert canon(per_file) == canon(expect)


def test_resume_unchanged_reuses_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tiny_dataset(tmp_path / "data.npz", seed=5)
    out = tmp_path / "out"
    first = gap_report(src, config=CFG, out_dir=out, progress=False)
    assert "resume:" not in capsys.readouterr().err  # no resume, no resume line
    shards = {p: p.stat().st_mtime_ns for p in (out / "shards").glob("*.npz")}
    again = gap_report(src, config=CFG, out_dir=out, resume=True, progress=False)
    assert resume_line(capsys.readouterr().err) == f"resume: reused {GROUPS} of {GROUPS} groups"
    assert again.metadata["units_reused"] == GROUPS and again.metadata["units_computed"] == 0
    assert {p: p.stat().st_mtime_ns for p in (out / "shards").glob("*.npz")} == shards
    assert numbers(again) == numbers(first)
    assert again.findings == first.findings
    # a config change, then a code change (another build of the same version), are not reused
    cfg2 = ReportConfig(schemes=CFG.schemes, ns=CFG.ns, verifiers=CFG.verifiers, samples=CFG.samples, seed=4, threads=1)
    gap_report(src, config=cfg2, out_dir=out, resume=True, progress=False)
    assert resume_line(capsys.readouterr().err).endswith(f"({GROUPS} recomputed: config changed for {GROUPS})")
    monkeypatch.setattr(report_config, "_code_digest", lambda: "another build")
    gap_report(src, config=cfg2, out_dir=out, resume=True, progress=False)
    assert resume_line(capsys.readouterr().err).endswith(f"({GROUPS} recomputed: code changed for {GROUPS})")


def test_progress_lines_when_not_a_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tiny_dataset(tmp_path / "data.npz", seed=6)
    gap_report(src, config=CFG, out_dir=tmp_path / "auto")  # progress=None: stderr is not a TTY here
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("report:")]
    assert len(lines) == GROUPS
    assert lines[0].startswith(f"report: 1/{GROUPS} groups done (data: d1 T=0.5 chat) ")
    assert lines[-1].startswith(f"report: {GROUPS}/{GROUPS} groups done (")
    assert all(ln.endswith(" s") for ln in lines)
    gap_report(src, config=CFG, out_dir=tmp_path / "quiet", progress=False)
    assert capsys.readouterr().err == ""


def test_cli_progress_and_resume_lines_on_piped_stderr(tmp_path: Path) -> None:
    src = tiny_dataset(tmp_path / "data.npz", seed=7)
    args = [
        sys.executable,
        "-m",
        "mdsd_fast",
        "report",
        "--dataset",
        str(src),
        "--out",
        str(tmp_path / "out"),
        "--schemes",
        "iid,wor",
        "--n",
        "1,2",
        "--verifiers",
        "sd,rrs",
        "--no-plots",
    ]
    res = subprocess.run(args, check=True, capture_output=True, text=True, timeout=300)
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("report:")]
    assert [ln.split(" groups done")[0] for ln in lines] == [f"report: {k}/{GROUPS}" for k in range(1, GROUPS + 1)]
    res = subprocess.run([*args, "--resume", "--no-progress"], check=True, capture_output=True, text=True, timeout=300)
    assert res.stderr.strip() == f"resume: reused {GROUPS} of {GROUPS} groups"
    meta = json.loads((tmp_path / "out" / "report.json").read_text())["metadata"]
    assert meta["units_reused"] == GROUPS


def test_code_digest_covers_the_compute_modules() -> None:
    """The shard key hashes every module of the rooms that compute a report's numbers, and only files
    that exist (a moved module would otherwise drop out of the key silently)."""
    from mdsd_fast.report.config import _COMPUTE_PARTS, compute_modules

    names = [name for name, f in compute_modules(_COMPUTE_PARTS) if f.is_file()]
    assert len(names) == len(compute_modules(_COMPUTE_PARTS))
    for room in ("inputs/", "bound/", "verifiers/", "data/", "report/"):
        assert any(n.startswith(room) for n in names), room
