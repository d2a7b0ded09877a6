"""Hostile logs: lying manifests, forged shards, bad row ids, killed conversions, bad encodings.

A log is read as untrusted input. Each case builds a small log with ``LogWriter``, then lies: a
manifest edited by hand (a group left out, counts understated, a wrong total, a path outside the
directory), or a "consistent liar" that rewrites a shard and fixes its size and sha256 in the
manifest so that only the content checks can see it (groups relabelled, row ids duplicated, a
token id of -5, a complete row summing to 0.5). Every one must be a ValueError naming the file,
never a report over the wrong rows. A conversion killed with SIGKILL must be named the same way by
``convert`` and ``report``; the converters name ``file:line`` for every bad line.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mdsd_fast

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from mdsd_fast.cli import main  # noqa: E402
from mdsd_fast.logs import LogWriter, open_logs  # noqa: E402
from mdsd_fast.logs.convert import from_openai_jsonl  # noqa: E402
from mdsd_fast.report.gap import ReportConfig  # noqa: E402
from mdsd_fast.report.logs import log_report  # noqa: E402

#: Where the imported mdsd_fast lives (an install's site-packages, or an in-place build's python/),
#: for the child processes.
PY = Path(mdsd_fast.__file__).resolve().parents[1]
CFG = ReportConfig(schemes=("iid",), ns=(2,), verifiers=("sd",))


def _rows(B: int) -> tuple[Any, ...]:
    ptr = np.arange(0, 3 * B + 1, 3)
    return ptr, np.tile([1, 2, 3], B), np.tile([0.5, 0.3, 0.2], B)


def _log(path: Path, B: int = 90, **kw: Any) -> Path:
    """B complete rows in three groups of B/3 (domains a, b, c)."""
    meta = dict(domain=np.array(["a", "b", "c"])[np.arange(B) % 3], draft=["d"] * B, temperature=np.ones(B))
    with LogWriter(path, 50, **kw) as w:
        w.write(_rows(B), _rows(B), p_complete=True, q_complete=True, meta=meta)
    return path


def _edit(log: Path, change: Callable[[dict[str, Any]], None]) -> None:
    m = json.loads((log / "manifest.json").read_text())
    change(m)
    (log / "manifest.json").write_text(json.dumps(m))


def _forge(log: Path, i: int, column: str, values: list[Any], row_ids: list[int] | None = None) -> None:
    """Rewrite one column of shard ``i`` and make the manifest agree on its size and sha256."""
    m = json.loads((log / "manifest.json").read_text())
    s = m["shards"][i]
    f = log / s["file"]
    t = pq.read_table(f)
    k = t.schema.get_field_index(column)
    t = t.set_column(k, t.schema.field(k), pa.array(values, type=t.schema.field(k).type))
    pq.write_table(t, f, compression="zstd", write_page_checksum=True)
    s.update(bytes=f.stat().st_size, sha256=hashlib.sha256(f.read_bytes()).hexdigest())
    if row_ids is not None:
        s["row_ids"] = row_ids
    (log / "manifest.json").write_text(json.dumps(m))


def _read_all(log: Path) -> int:
    return sum(len(c) for c in open_logs(log).iter_chunks(64))


def test_a_manifest_that_leaves_a_group_out_is_refused(tmp_path: Path) -> None:
    log = _log(tmp_path / "log")
    _edit(log, lambda m: m["shards"][0].update(groups=m["shards"][0]["groups"][:2]))  # 60 of the 90 rows
    with pytest.raises(ValueError, match=r"manifest.json: damaged manifest .*groups hold 60 rows, its rows field 90"):
        log_report(log, config=CFG, progress=False)


def test_understated_counts_are_refused_with_a_limit(tmp_path: Path) -> None:
    log = _log(tmp_path / "log")
    _edit(log, lambda m: [g.__setitem__(3, 5) for g in m["shards"][0]["groups"]])
    with pytest.raises(ValueError, match="damaged manifest .*groups hold 15 rows"):
        log_report(log, config=CFG, progress=False, limit=20)


def test_consistent_lies_about_groups_are_seen_in_the_shard(tmp_path: Path) -> None:
    log = _log(tmp_path / "log")
    _edit(log, lambda m: [g.__setitem__(3, n) for g, n in zip(m["shards"][0]["groups"], (40, 20, 30), strict=True)])
    with pytest.raises(ValueError, match=r"shard-00000.parquet: shard does not match the manifest \(group domain 'a'"):
        log_report(log, config=CFG, progress=False, limit=20)
    log2 = _log(tmp_path / "log2")
    _edit(log2, lambda m: m["shards"][0]["groups"][0].__setitem__(0, "x"))  # a renamed group, counts kept
    with pytest.raises(
        ValueError, match="shard does not match the manifest .*the shard holds 30 rows, the manifest says 0"
    ):
        _read_all(log2)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda m: m.update(rows=1000), "rows: the manifest says 1000, its shards hold 90"),
        (lambda m: m["shards"][0].update(file="../elsewhere.parquet"), "a 'file' named shard-NNNNN.parquet"),
        (lambda m: m["shards"][0].update(row_ids=[0, 10]), r"90 distinct row ids cannot lie in \[0, 10\]"),
        (lambda m: m["shards"][0].update(rows=True), "rows: expected an integer"),
        (lambda m: m.update(vocab_size=2**40), "vocab_size: expected an integer in"),
        (lambda m: m["shards"][0]["groups"].append(m["shards"][0]["groups"][0]), "listed twice"),
    ],
)
def test_manifest_fields_are_checked(tmp_path: Path, change: Callable[[dict[str, Any]], None], message: str) -> None:
    log = _log(tmp_path / "log")
    _edit(log, change)
    with pytest.raises(ValueError, match=f"manifest.json: damaged manifest .*{message}"):
        open_logs(log)


def test_a_lying_row_id_range_is_seen(tmp_path: Path) -> None:
    log = _log(tmp_path / "log")
    _edit(log, lambda m: m["shards"][0].update(row_ids=[5, 200]))
    with pytest.raises(ValueError, match=r"row ids span \[0, 89\], the manifest says \[5, 200\]"):
        _read_all(log)


def test_forged_shards_are_refused(tmp_path: Path) -> None:
    log = _log(tmp_path / "dup", B=6)
    _forge(log, 0, "row_id", [0, 1, 2, 2, 4, 5], row_ids=[0, 5])
    with pytest.raises(ValueError, match="row id 2 appears twice"):
        _read_all(log)
    log = _log(tmp_path / "across", B=6, rows_per_shard=3)  # ids 0-2 and 3-5; shard 1 forged to 1-3
    _forge(log, 1, "row_id", [1, 2, 3], row_ids=[1, 3])
    with pytest.raises(ValueError, match="row id 1 is also in shard-0000[01].parquet"):
        _read_all(log)
    log = _log(tmp_path / "neg", B=3)
    _forge(log, 0, "p_ids", [[-5, 2, 3], [1, 2, 3], [1, 2, 3]])  # an id below -1: padding to a TopK reader
    with pytest.raises(ValueError, match=r"damaged shard \(a p token id outside \[0, 50\)\)"):
        _read_all(log)
    log = _log(tmp_path / "order", B=3)
    _forge(log, 0, "q_ids", [[3, 2, 1], [1, 2, 3], [1, 2, 3]])
    with pytest.raises(ValueError, match="q token ids not ascending"):
        _read_all(log)
    log = _log(tmp_path / "half", B=3)
    _forge(log, 0, "p_probs", [[0.25, 0.15, 0.1], [0.5, 0.3, 0.2], [0.5, 0.3, 0.2]])
    with pytest.raises(ValueError, match="a p row logs mass 0.50+7, marked complete = True"):
        _read_all(log)


def test_writer_refuses_bad_row_ids(tmp_path: Path) -> None:
    def write(path: Path, *blocks: Any, **kw: Any) -> None:
        with LogWriter(path, 50, **kw) as w:
            for ids in blocks:
                B = len(ids) if ids is not None else 2
                meta = {} if ids is None else dict(row_id=ids)
                w.write(_rows(B), _rows(B), p_complete=True, q_complete=True, meta=meta)

    for i, (ids, err, message) in enumerate(
        [
            ([0, 2**31], ValueError, r"meta\['row_id'\]: ids must be in \[0, 2\^31\)"),
            (np.array([1, 2**64 - 1], dtype=np.uint64), ValueError, r"ids must be in \[0, 2\^31\)"),
            ([0.0, 1.5], TypeError, r"meta\['row_id'\]: expected integer ids"),
            ([3, 3], ValueError, "row id 3 given twice"),
        ]
    ):
        with pytest.raises(err, match=message):
            write(tmp_path / f"bad{i}", ids)
        assert not (tmp_path / f"bad{i}").exists()
    with pytest.raises(ValueError, match="row id 1 was already written to this log"):
        write(tmp_path / "later", None, [1, 7])  # counting ids 0, 1, then a 1 again
    with pytest.raises(ValueError, match="row id 4 was already written"):
        write(tmp_path / "shards", [4, 5], [9, 8], [4, 10], rows_per_shard=2)
    write(tmp_path / "ok", [5, 6], None, [0, 1])  # counting resumes after the largest id: 7, 8
    assert np.array_equal(
        np.concatenate([c.row_id for c in open_logs(tmp_path / "ok").iter_chunks(9)]), [5, 6, 7, 8, 0, 1]
    )


@pytest.mark.parametrize(
    "change, err, message",
    [
        (dict(p=(np.array([0.0, 3.0]), [1, 2, 3], [0.5, 0.3, 0.2])), TypeError, "p: ptr must be integers"),
        (dict(p=(np.array([0, 2**64 - 1], np.uint64), [1], [1.0])), TypeError, "p: ptr must be integers below 2"),
        (dict(position=[2.7]), ValueError, r"meta\['position'\]: expected integers >= -1"),
        (dict(position=[2**70]), ValueError, r"meta\['position'\]: expected integers"),
        (dict(temperature=[np.inf]), ValueError, r"meta\['temperature'\]: expected finite"),
        (dict(temperature=[-1.0]), ValueError, r"meta\['temperature'\]: expected numbers >= 0"),
        (dict(temperature=["hot"]), ValueError, r"meta\['temperature'\]: expected numbers"),
        (dict(p_complete="no"), TypeError, "p_complete: expected booleans"),
        (dict(q_complete=[2]), TypeError, "q_complete: expected booleans"),
    ],
)
def test_writer_refuses_bad_columns(tmp_path: Path, change: dict[str, Any], err: type, message: str) -> None:
    one = (np.array([0, 3]), [1, 2, 3], [0.5, 0.3, 0.2])
    args: dict[str, Any] = dict(p=one, q=one, p_complete=True, q_complete=True)
    meta = {k: change.pop(k) for k in ("position", "temperature") if k in change}
    args.update(change)
    with pytest.raises(err, match=message), LogWriter(tmp_path / "log", 50) as w:
        w.write(args.pop("p"), args.pop("q"), meta=meta, **args)
    assert not (tmp_path / "log").exists()


def test_iter_chunks_arguments_are_named(tmp_path: Path) -> None:
    logs = open_logs(_log(tmp_path / "log", B=6, rows_per_shard=3))
    for shards, err, message in [
        ([7], ValueError, r"shards: no shard 7 \(the log has 2: 0 to 1\)"),
        ([-1], ValueError, "shards: no shard -1"),
        ([True], TypeError, "shards: expected integer shard indices"),
        ("0", TypeError, "shards: expected a list"),
    ]:
        with pytest.raises(err, match=message):
            list(logs.iter_chunks(4, shards=shards))
    with pytest.raises(ValueError, match=r"limit: expected an integer >= 0 .* got -3"):
        list(logs.iter_chunks(4, limit=-3))
    assert list(logs.iter_chunks(4, limit=0)) == []
    assert [len(c) for c in logs.iter_chunks(4, shards=[np.int64(1)])] == [3]


KILLED = """
import os, signal, sys
import numpy as np
from mdsd_fast.logs import LogWriter
one = (np.array([0, 2]), np.array([1, 2]), np.array([0.5, 0.5]))
w = LogWriter(sys.argv[1], 10, rows_per_shard=1)
w.write(one, one, p_complete=True, q_complete=True, meta={})  # shard 0 closed
w2 = LogWriter(sys.argv[2], 10)
w2.write(one, one, p_complete=True, q_complete=True, meta={})  # shard 0 still open
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_a_killed_conversion_is_named_alike_by_convert_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(PY)}
    proc = subprocess.run([sys.executable, "-c", KILLED, "closed", "open"], env=env, timeout=120)
    assert proc.returncode == -signal.SIGKILL
    assert (tmp_path / "closed" / "shard-00000.parquet").exists() and not (
        tmp_path / "closed" / "manifest.json"
    ).exists()
    assert [f.name for f in (tmp_path / "open").iterdir()] == [".shard-00000.parquet.tmp"]
    for d in ("closed", "open"):
        said = []
        for argv in (["convert", "dataset", "--out", d], ["report", "--dataset", d, "--out", "rep", "--no-plots"]):
            assert main(argv) == 2
            err = capsys.readouterr().err.strip()
            assert "\n" not in err and "Traceback" not in err
            said.append(err.partition(": error: ")[2])
        want = (
            f"{d}: an unfinished log (its conversion stopped before writing manifest.json); continue it with "
            "`mdsd-fast convert ... --resume` (the same input and options), or remove this directory and convert again"
        )
        assert said[0] == said[1] == want, said


RESUMED = """
import os, signal, sys
import mdsd_fast.logs.convert as cv
from mdsd_fast.logs.writer import LogWriter
close, calls = LogWriter._close_shard, []
def killed_at_third(self):
    calls.append(1)
    if len(calls) == 3 and self._writer is not None:
        os.kill(os.getpid(), signal.SIGKILL)  # shards 0 and 1 closed, shard 2 written but not renamed
    close(self)
LogWriter._close_shard = killed_at_third
cv.BLOCK_ROWS = 2
if sys.argv[1] == "dataset":
    cv.from_dataset(sys.argv[2], sys.argv[3], rows_per_shard=3)
else:
    cv.from_openai_jsonl(sys.argv[2], sys.argv[3], sys.argv[4], vocab_size=20, rows_per_shard=2)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_a_killed_conversion_resumes_to_the_same_log(tmp_path: Path) -> None:
    import mdsd_fast as mf

    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(6), 11), rng.dirichlet(np.ones(6), 11)
    data = mf.from_arrays(p, q, meta=[dict(domain="d", temperature=1.0)] * 11).save(tmp_path / "data.npz")
    t, d = tmp_path / "t.jsonl", tmp_path / "d.jsonl"
    lines = [_api([(c, -0.1, -3.0), ("y", -0.2, -4.0)]) for c in "abcdefg"]
    t.write_text("\n".join(lines) + "\n")
    d.write_text("\n".join(lines) + "\n")
    env = {**os.environ, "PYTHONPATH": str(PY)}
    runs = [("dataset", [str(data)], ["--rows-per-shard", "3"]), ("openai", [str(t), str(d)], ["--vocab-size", "20"])]
    for kind, inputs, opts in runs:
        out = tmp_path / f"{kind}_log"
        proc = subprocess.run([sys.executable, "-c", RESUMED, kind, *inputs, str(out)], env=env, timeout=120)
        assert proc.returncode == -signal.SIGKILL
        assert sorted(f.name for f in out.iterdir()) == [
            ".shard-00002.parquet.tmp",
            "shard-00000.parquet",
            "shard-00001.parquet",
        ]
        if kind == "openai":
            opts = [*opts, "--rows-per-shard", "2"]
        assert main(["convert", kind, *inputs, "--out", str(out), *opts, "--resume"]) == 0
        assert main(["convert", kind, *inputs, "--out", str(tmp_path / f"{kind}_fresh"), *opts]) == 0
        got, want = (json.loads((tmp_path / n / "manifest.json").read_text()) for n in (f"{kind}_log", f"{kind}_fresh"))
        assert got == want and len(got["shards"]) >= 3  # the same shards, byte for byte (their sha256)
    with pytest.raises(ValueError, match="already holds a log"):
        from_openai_jsonl(t, d, tmp_path / "openai_log", vocab_size=20, resume=True)


def _api(tokens: list[tuple[str, float, float]]) -> str:
    """A response whose positions sample ``token`` with logprob ``lp`` and list one alternative ``z``."""
    content = [
        dict(token=t, logprob=lp, top_logprobs=[dict(token=t, logprob=lp), dict(token="z", logprob=lz)])
        for t, lp, lz in tokens
    ]
    return json.dumps(dict(id="r", model="m", choices=[dict(logprobs=dict(content=content))]))


def test_converter_errors_name_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t, d = tmp_path / "t.jsonl", tmp_path / "d.jsonl"
    ok = _api([("x", -0.1, -5.0)])
    t.write_text("\n".join([ok, ok, _api([("x", -0.01, -0.2)])]) + "\n")  # line 3: mass 1.81, the block's row 2
    d.write_text("\n".join([ok, ok, ok]) + "\n")
    with pytest.raises(ValueError, match=rf"^{t}:3 choice 0 position 0: logged mass 1.8"):
        from_openai_jsonl(t, d, tmp_path / "o1", vocab_size=10)
    d.write_text("\n".join([ok, _api([("x", -0.1, 0.0)]), ok]) + "\n")
    t.write_text("\n".join([ok, ok, ok]) + "\n")
    with pytest.raises(ValueError, match=rf"^{d}:2 choice 0 position 0: logged mass 1.9"):
        from_openai_jsonl(t, d, tmp_path / "o2", vocab_size=10)
    t.write_bytes(ok.encode() + b'\n{"id": "\xff\xfe"}\n')
    with pytest.raises(ValueError, match=rf"^{t}:2: not UTF-8 text"):
        from_openai_jsonl(t, d, tmp_path / "o3", vocab_size=10)
    t.write_text('{"id": ' + "1" * 5000 + "}\n")  # more digits than Python converts
    with pytest.raises(ValueError, match=rf"^{t}:1: not JSON"):
        from_openai_jsonl(t, d, tmp_path / "o4", vocab_size=10)
    t.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    code = main(["convert", "openai", str(t), str(d), "--out", str(tmp_path / "o5"), "--vocab-size", "10"])
    err = capsys.readouterr().err.strip()
    assert (
        code == 2
        and err == f"mdsd-fast convert: error: {t}:1: JSON nested too deeply to be a chat/completions response"
    )
    assert not any(tmp_path.glob("o*"))  # every failed conversion removed what it wrote
