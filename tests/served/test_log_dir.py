"""Served logs in the package's log format (to_log) and the command line's contract."""

from __future__ import annotations

import numpy as np
import pytest
from served_rows import synthetic_rows

from mdsd_fast.cli import main
from mdsd_fast.served import check_served, generate_served, to_log

pytest.importorskip("pyarrow")
ROWS = synthetic_rows()


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("served_logs")
    out = {}
    for e in ("vllm", "argmax"):
        j = generate_served(d / f"{e}.jsonl", e, responses=40, length=50, rows=ROWS, seed=4, top_logprobs=6)
        out[e] = (j, to_log(j, d / e, vocab_size=64, rows_per_shard=700))
    return out


@pytest.mark.parametrize("engine", ["vllm", "argmax"])
def test_a_log_directory_gives_the_jsonl_verdict(pair, engine):
    j, d = pair[engine]
    a, b = check_served(j, replicates=999), check_served(d, replicates=999, workers=2)
    assert a.positions == b.positions == 2000
    assert a.lossless == b.lossless == (engine == "vllm")
    # the emitted ranks are the same outcomes; the expected masses agree to float32 storage
    assert [r.observed for r in a.by_rank] == [r.observed for r in b.by_rank]
    np.testing.assert_allclose([r.expected for r in a.by_rank], [r.expected for r in b.by_rank], rtol=1e-5)
    assert [g.positions for g in a.by_position] == [g.positions for g in b.by_position]


def test_a_log_that_is_not_served_is_refused(tmp_path):
    from mdsd_fast.logs import LogWriter

    with LogWriter(tmp_path / "pq", vocab_size=4) as w:
        w.write(([0, 2], [0, 1], [0.5, 0.5]), ([0, 2], [0, 1], [0.5, 0.5]), p_complete=True, q_complete=True, meta={})
    with pytest.raises(ValueError, match="not a served row"):
        check_served(tmp_path / "pq")
    (tmp_path / "plain").mkdir()
    with pytest.raises(ValueError, match="not a log directory"):
        check_served(tmp_path / "plain")


def test_the_command_line_exit_codes(pair, capsys):
    assert main(["check-served", str(pair["vllm"][0]), "--replicates", "199"]) == 0
    assert "no evidence against losslessness" in capsys.readouterr().out
    assert main(["check-served", str(pair["argmax"][1]), "--replicates", "199", "--workers", "2"]) == 1
    assert "NOT LOSSLESS" in capsys.readouterr().out
    assert main(["check-served", str(pair["vllm"][0]), "--alpha", "0.001", "--replicates", "99"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "argument --replicates" in err  # one line naming the option
    assert main(["check-served", "/nonexistent/x.jsonl"]) == 2
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["check-served", str(pair["vllm"][0]), "--alpha", "zero"])
    assert exc.value.code == 2
