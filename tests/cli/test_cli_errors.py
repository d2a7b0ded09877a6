"""Every user error of the command line is one line on stderr naming the problem, exit code 2.

Each case runs ``mdsd_fast.cli.main(argv)`` in this process (stderr captured) on tiny inputs, and
asserts: no "Traceback", exactly one non-empty line, starting with ``mdsd-fast <command>: error:``,
containing what names the problem (the file, the shard, the option), exit code 2. The controls:
``--debug`` shows the traceback, an internal bug shows one and says how to report it (exit 3),
and bare ``mdsd-fast`` prints the help (exit 0), the last two also as real processes.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

import mdsd_fast
import mdsd_fast.cli.commands as cli
from mdsd_fast import from_arrays
from mdsd_fast.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the default --out is ./mdsd_report: never the source tree


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's usage errors exit through Parser.error
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


def _rows(seed: int, B: int = 4, V: int = 6) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p, q = rng.random((B, V)) + 0.05, rng.random((B, V)) + 0.05
    return p / p.sum(1, keepdims=True), q / q.sum(1, keepdims=True)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("cli_inputs")
    meta = [dict(domain="d", temperature=1.0)] * 4
    good = from_arrays(*_rows(0), meta=meta).save(d / "good.npz", encoding="float64")
    junk = d / "junk.npz"
    junk.write_bytes(np.random.default_rng(1).bytes(4000))  # random bytes named like a dataset
    damaged = d / "damaged.npz"
    data = bytearray(good.read_bytes())
    with zipfile.ZipFile(good) as zf:  # flip bytes inside a member: the archive opens, a member does not
        info = zf.getinfo("p_values.npy")
    start = info.header_offset + 30 + len(info.filename) + 8
    data[start : start + 32] = bytes(32)
    damaged.write_bytes(bytes(data))
    shards = d / "shards"
    shards.mkdir()
    from_arrays(*_rows(2), meta=meta).save(shards / "a_good.npz")
    (shards / "b_bad.npz").write_bytes(b"PK\x03\x04 not really a zip")
    empty = d / "empty_dir"
    empty.mkdir()
    p, q = _rows(3)
    np.save(d / "p.npy", p)
    np.save(d / "q.npy", q)
    np.save(d / "neg.npy", -p)
    np.save(d / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    (d / "raw.npy").write_bytes(b"not numpy at all")
    (d / "a_file").write_text("x")
    (d / "raises.py").write_text("def verify(p, q, drafts, rng):\n    raise RuntimeError('engine exploded')\n")
    names = ["good.npz", "junk.npz", "damaged.npz", "p.npy", "q.npy", "neg.npy", "obj.npy", "raw.npy"]
    out = {n.split(".")[0]: d / n for n in names}
    out.update(shards=shards, empty=empty, dir=d, file=d / "a_file", raises=d / "raises.py")
    return out


def _free_port() -> int:
    with socket.socket() as s:  # bound, never listening: a connection is refused at once
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# (argv with {placeholders} for the fixture's files, text the one line must contain)
CASES: list[tuple[str, str]] = [
    # files
    ("report --dataset {dir}/missing.npz", "missing.npz"),
    ("report --dataset {junk}", "junk.npz: not a dataset file"),
    ("report --dataset {damaged}", "damaged.npz: damaged dataset file"),
    ("report --dataset {shards}", "b_bad.npz"),
    ("report --dataset {empty}", "no .npz dataset files"),
    ("report --arrays {dir}/missing.npy {q}", "--arrays"),
    ("report --arrays {raw} {q}", "raw.npy: not a .npy file"),
    ("report --arrays {obj} {q}", "obj.npy: holds Python objects"),
    ("report --arrays {good} {q}", "good.npz: an .npz archive"),
    ("report --arrays {neg} {q} --n 1 --schemes iid --no-plots --no-progress --out {dir}/o1", "non-negative"),
    ("report --dataset {good} --arrays {p} {q}", "not allowed with argument"),
    ("report --out {file}", "is not a directory"),
    ("report --out {file}/sub", "is not a writable directory"),
    # option values
    ("report --workers 0", "argument --workers: expected a positive integer, got '0'"),
    ("report --workers -1", "argument --workers: expected a positive integer, got '-1'"),
    ("report --workers two", "argument --workers: expected an integer"),
    ("report --n 0", "argument --n"),
    ("report --n 9", "argument --n: every n must be an integer in 1..8"),
    ("report --n 2,x", "argument --n: expected an integer, got 'x'"),
    ("report --n 2,2", "argument --n: '2' given twice"),
    ("report --n ,", "argument --n"),
    ("report --schemes iid,bogus", "argument --schemes: unknown scheme 'bogus'"),
    ("report --schemes iid,top3+iid --n 2", "argument --schemes: top3+iid needs n >= 4, got n = 2"),
    ("report --verifiers rrs,nope", "argument --verifiers: unknown verifier 'nope'"),
    ("report --temperatures warm", "argument --temperatures: expected a number"),
    ("report --temperatures nan", "argument --temperatures: expected a finite number"),
    ("report --dataset {good} --temperatures 0.5", "no positions at T = 0.5 (the dataset has T = 1)"),
    ("report --wor-budget 0", "argument --wor-budget: expected a positive number"),
    ("report --wor-budget -1e6", "argument --wor-budget"),
    ("report --wor-budget inf", "argument --wor-budget: expected a finite number"),
    ("report --samples 5 --simulate", "argument --samples: need at least 100"),
    ("report --gamma 0", "argument --gamma"),
    ("report --max-rows -1", "argument --max-rows"),
    ("report --seed -3", "argument --seed"),
    ("report --no-such-option", "unrecognized arguments: --no-such-option"),
    ("report --shemes iid", "unrecognized arguments: --shemes iid; did you mean '--schemes'?"),
    ("nosuchcommand", "invalid choice: 'nosuchcommand'"),
    ("reprot", "invalid choice: 'reprot'"),
    ("reprot", "did you mean 'report'?"),
    # combinations: a verifier asked for by name that would never run is named, not dropped
    ("report --schemes wor --verifiers rrs", "argument --verifiers: rrs runs under iid, top<m>+iid drafts, not"),
    ("report --verifiers spechub,rrs --n 3", "argument --verifiers: spechub runs at n = 2 only, not at n = 3"),
    # checked before the shipped data loads (the case's time limit)
    ("report --temperatures 0.5", "argument --temperatures: no positions at T = 0.5 (the dataset has T = 0.7, 1)"),
    # the scheduler
    ("report --scheduler tcp://127.0.0.1:{port}", "cannot reach a Dask scheduler at tcp://127.0.0.1:"),
    ("report --scheduler tcp://127.0.0.1", "scheduler: expected tcp://HOST:PORT"),
    ("report --scheduler tcp://127.0.0.1:{port} --workers 2", "--workers"),
    # audit
    ("audit no_such_module_xyz:verify", "cannot import 'no_such_module_xyz'"),
    ("audit {raises}:verify --n 1 --samples 200", "verify raised RuntimeError: engine exploded"),
    ("audit {raises}:verify --n 0", "argument --n"),
    ("audit {raises}:verify --scheme bogus", "scheme"),
    ("audit {raises}:verify --samples 10", "samples"),
    ("audit {raises}:verify --alpha 2", "alpha"),
    ("audit {raises}:missing", "no attribute 'missing'"),
    # extract (no model is loaded in any of these)
    ("extract", "give --default-dataset, or --target"),
    ("extract --target {dir}/m --draft oops --out {dir}/x.npz", "--draft: expected NAME=layerskip"),
    ("extract --target {dir}/m --draft a=ngram:2:{dir}/none.txt --out {dir}/x.npz", "none.txt"),
    ("extract --target {dir}/m --draft a=layerskip:1 --out {dir}/x.npz", "--target: no such model"),
    ("extract --target smollm2 --draft a=layerskip:1 --prompts {dir}/p.jsonl --out {dir}/x.npz", "--prompts"),
    ("extract --record-every 0", "argument --record-every"),
    ("extract --temperatures 0.7 -1", "argument --temperatures"),
    # demo
    ("demo --max-n 0", "argument --max-n"),
]


def _argv(template: str, files: dict[str, Path], port: int) -> list[str]:
    subst = {k: str(v) for k, v in files.items()} | {"port": str(port)}
    return [part.format(**subst) for part in template.split()]


@pytest.mark.parametrize(("template", "needle"), CASES, ids=[c[0] for c in CASES])
def test_user_error_is_one_line_and_exit_2(
    template: str, needle: str, files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _argv(template, files, _free_port())
    t0 = time.perf_counter()
    code, err = _run(argv, capsys)
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err, err
    assert len(lines) == 1, err
    command = argv[0] if argv[0] in ("report", "audit", "extract", "demo") else None
    assert lines[0].startswith(f"mdsd-fast {command}: error: " if command else "mdsd-fast: error: "), lines[0]
    assert needle in lines[0], lines[0]
    assert "allow_pickle" not in err
    assert code == 2, (code, err)
    assert time.perf_counter() - t0 < 10  # the unreachable scheduler fails fast, not after 30 s
    assert not Path("mdsd_report").exists()  # a refused run leaves no output directory behind


def test_debug_shows_the_traceback(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["report", "--dataset", str(files["junk"]), "--debug"], ["--debug", "audit", "nomod_q:f"]):
        code, err = _run(argv, capsys)
        assert code == 2
        assert "Traceback (most recent call last)" in err
        assert (
            err.strip().splitlines()[-1].startswith(f"mdsd-fast {argv[0] if argv[0] != '--debug' else argv[1]}: error:")
        )


def test_internal_error_shows_traceback_and_how_to_report(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(args: object) -> int:
        raise RuntimeError("an invariant broke")

    monkeypatch.setattr(cli, "_demo", broken)
    code, err = _run(["demo"], capsys)
    assert code == 3
    assert "Traceback" in err and "RuntimeError: an invariant broke" in err
    assert "this is a bug in mdsd_fast" in err.splitlines()[-1] and "please report it" in err


def test_interrupt_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_report", interrupted)
    code, err = _run(["report"], capsys)
    assert code == 130
    assert err.strip() == "mdsd-fast report: interrupted (rerun with --resume to reuse the groups already finished)"


def test_bare_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: mdsd-fast") and "report" in out and "Exit codes" in out


def _subprocess(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    # The package this test imported (installed, or a source tree on PYTHONPATH with its built _core),
    # not the checkout's python/ directory, which has no compiled extension in a clean clone.
    here = str(Path(mdsd_fast.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-m", "mdsd_fast", *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=env
    )


def test_as_a_process(files: dict[str, Path]) -> None:
    bare = _subprocess()
    assert bare.returncode == 0 and bare.stdout.startswith("usage: mdsd-fast") and not bare.stderr
    bad = _subprocess("report", "--dataset", str(files["junk"]))
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines() == [
        f"mdsd-fast report: error: {files['junk']}: not a dataset file "
        "(expected an .npz archive in the mdsd_fast.lmdist format)"
    ]


def test_relative_paths_reach_dask_workers(
    files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Workers that run in another directory still find the data and write the shards where the
    report reads them: every path is made absolute before it is shipped."""
    distributed = pytest.importorskip("dask.distributed")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    from_arrays(*_rows(5), meta=[dict(domain="d", temperature=1.0)] * 4).save(tmp_path / "data" / "x.npz")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as lc:
        with distributed.Client(lc) as client:
            client.run(os.chdir, str(elsewhere))  # the worker's cwd is not ours
            argv = ["report", "--dataset", "data", "--out", "rel_out", "--scheduler", lc.scheduler_address]
            code, err = _run([*argv, "--n", "1,2", "--schemes", "iid", "--verifiers", "rrs", "--no-plots"], capsys)
    assert code == 0, err
    assert (tmp_path / "rel_out" / "report.json").exists()
    assert not (elsewhere / "rel_out").exists()


def test_a_port_that_is_not_a_dask_scheduler_fails_fast(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A listening socket that never speaks Dask: the TCP check passes, Dask's own client would
    wait forever for the handshake; the report gives up after SCHEDULER_TIMEOUT."""
    pytest.importorskip("dask.distributed")
    import mdsd_fast.report.scheduler as scheduler

    monkeypatch.setattr(scheduler, "SCHEDULER_TIMEOUT", 1.0)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        address = f"tcp://127.0.0.1:{silent.getsockname()[1]}"
        t0 = time.perf_counter()
        code, err = _run(["report", "--scheduler", address], capsys)
    assert time.perf_counter() - t0 < 10
    assert code == 2 and "Traceback" not in err
    assert (
        err.strip()
        == f"mdsd-fast report: error: scheduler: {address} does not answer as a Dask scheduler within 1 s (TimeoutError)"
    )
