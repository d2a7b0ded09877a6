"""Every output is written atomically: a failed write leaves the old file or none, no temporary
file, and an error naming the file; new files get the mode ``open()`` would give (0644 under 022).

A full disk is simulated by a real failing write, not a patch: the file size limit
(``RLIMIT_FSIZE``) makes the kernel refuse any write past ``n`` bytes with EFBIG ("File too
large"), as a full disk refuses with ENOSPC; Python ignores the SIGXFSZ that comes with it. The
limit is lowered around one call and restored.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from mdsd_fast import from_arrays
from mdsd_fast._files import atomic_write
from mdsd_fast.cli import main
from mdsd_fast.cli.args import describe

resource = pytest.importorskip("resource")
pytestmark = pytest.mark.skipif(
    sys.platform == "win32" or signal.getsignal(signal.SIGXFSZ) != signal.SIG_IGN,
    reason="needs RLIMIT_FSIZE with SIGXFSZ ignored (POSIX CPython)",
)


@contextmanager
def file_size_limit(n: int) -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (n, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


@contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def _leftovers(d: Path) -> list[str]:
    return sorted(f.name for f in d.rglob("*") if f.name.startswith(".") or f.name.endswith(".tmp"))


def test_a_failed_write_keeps_the_old_file_and_names_the_new_one(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    atomic_write(out, "old\n")
    with file_size_limit(1000), pytest.raises(OSError) as exc:
        atomic_write(out, "x" * 5000)
    assert describe(exc.value) == f"{out}: not written (File too large)"
    assert out.read_text() == "old\n" and _leftovers(tmp_path) == []
    with pytest.raises(ZeroDivisionError):  # an error while producing the bytes: the same cleanup
        atomic_write(out, lambda fh: (fh.write(b"partial"), 1 / 0))
    assert out.read_text() == "old\n" and _leftovers(tmp_path) == []
    with pytest.raises(OSError, match="not written"):
        atomic_write(tmp_path / "report.json" / "below_a_file", "x")


@pytest.mark.parametrize("mask", [0o022, 0o027])
def test_new_files_get_the_mode_open_gives(tmp_path: Path, mask: int) -> None:
    rep = _report(tmp_path)
    with umask(mask):
        plain = tmp_path / "plain"
        plain.write_text("x")
        rep.to_json(tmp_path / "report.json")
        from_arrays(*_rows(), meta=[dict(domain="d", temperature=1.0)] * 3).save(tmp_path / "data.npz")
    for f in ("report.json", "data.npz"):
        assert (tmp_path / f).stat().st_mode & 0o777 == plain.stat().st_mode & 0o777 == 0o666 & ~mask


def _rows() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    p, q = rng.random((3, 5)) + 0.1, rng.random((3, 5)) + 0.1
    return p / p.sum(1, keepdims=True), q / q.sum(1, keepdims=True)


def _log(path: Path) -> Path:
    pytest.importorskip("pyarrow")
    from mdsd_fast.logs import LogWriter

    B = 12
    ptr = np.arange(0, 3 * B + 1, 3)
    side = (ptr, np.tile([1, 2, 3], B), np.tile([0.5, 0.3, 0.2], B))
    meta = dict(domain=np.array(["a", "b"])[np.arange(B) % 2], draft=["d"] * B, temperature=np.ones(B))
    with LogWriter(path, 50) as w:
        w.write(side, side, p_complete=True, q_complete=True, meta=meta)
    return path


def _report(tmp_path: Path) -> object:
    from mdsd_fast.report.gap import ReportConfig
    from mdsd_fast.report.logs import log_report

    cfg = ReportConfig(schemes=("iid",), ns=(2,), verifiers=("sd",))
    return log_report(_log(tmp_path / "log"), config=cfg, progress=False)


def test_report_json_on_a_full_disk_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _log(tmp_path / "log")
    argv = ["report", "--dataset", str(log), "--no-plots", "--no-progress", "--out"]
    assert main([*argv, str(tmp_path / "room")]) == 0  # with room: the sizes of what it writes
    sizes = {f.name: f.stat().st_size for f in (tmp_path / "room").rglob("*") if f.is_file()}
    before = max(v for k, v in sizes.items() if k.endswith(".npz") or k == "report.csv")
    limit = (before + sizes["report.json"]) // 2  # the units and report.csv fit, report.json does not
    assert before < limit < sizes["report.json"] - 1000
    capsys.readouterr()
    out = tmp_path / "out"
    with file_size_limit(limit):
        code = main([*argv, str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1] == f"mdsd-fast report: error: {out / 'report.json'}: not written (File too large)"
    assert (out / "report.csv").exists() and not (out / "report.json").exists() and _leftovers(out) == []


def test_log_writer_on_a_full_disk_names_the_shard_and_removes_the_log(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    from mdsd_fast.logs import LogWriter

    B = 4000
    rng = np.random.default_rng(0)
    ptr = np.arange(0, 8 * B + 1, 8)
    ids = np.sort(rng.choice(40_000, size=(B, 8), replace=False, shuffle=False), axis=1).ravel()
    side = (ptr, ids, np.full(8 * B, 0.1))
    with file_size_limit(20_000), pytest.raises(OSError) as exc:
        with LogWriter(tmp_path / "log", 50_000) as w:
            w.write(side, side, p_complete=False, q_complete=False, meta={})
    assert describe(exc.value) == f"{tmp_path / 'log' / 'shard-00000.parquet'}: not written (File too large)"
    assert not (tmp_path / "log").exists()


def test_a_dataset_file_on_a_full_disk_leaves_nothing(tmp_path: Path) -> None:
    ds = from_arrays(*_rows(), meta=[dict(domain="d", temperature=1.0)] * 3)
    with file_size_limit(200), pytest.raises(OSError) as exc:
        ds.save(tmp_path / "data.npz")
    assert describe(exc.value) == f"{tmp_path / 'data.npz'}: not written (File too large)"
    assert list(tmp_path.iterdir()) == []
