"""The served-log check: the PIT is exact (enumeration), the p-value has its size, the stated power
holds, lossless logs pass, every reproduced bug is flagged, and the localisation points at it."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from served_rows import synthetic_rows

from mdsd_fast.served import ENGINES, LOSSLESS, check_served, generate_served
from mdsd_fast.served import read as served_read
from mdsd_fast.served.stats import BINS, Tally, mc_pvalue, tv_detectable

ROWS = synthetic_rows()


def _position_intervals(tops: list[tuple[str, float]], tokens: list[str]) -> list[tuple[float, float]]:
    """[F, F + f) of each emitted token, through the reader's own per-position code."""
    out = []
    for t in tokens:
        block, tally = served_read._Block(), Tally()
        pos = {
            "token": t,
            "logprob": math.log(dict(tops).get(t, 1e-9)),
            "top_logprobs": [{"token": k, "logprob": math.log(v)} for k, v in tops],
        }
        served_read._position(pos, "here", block, tally, 0, 1.0)
        out.append((block.before[0], block.before[0] + block.mass[0]))
    return out


def test_pit_partitions_the_unit_interval_exactly():
    # ties ("b", "c"), a duplicate string ("d" twice: one outcome), a tail of 0.1 ("z": unlogged)
    tops = [("a", 0.4), ("c", 0.15), ("b", 0.15), ("d", 0.1), ("d", 0.1)]
    merged = {"a": 0.4, "b": 0.15, "c": 0.15, "d": 0.2, "z": 0.1}
    iv = _position_intervals(tops, list(merged))
    for (lo, hi), m in zip(iv, merged.values(), strict=True):
        assert hi - lo == pytest.approx(m, abs=1e-15)  # each outcome's own mass
    ends = sorted(iv)
    assert ends[0][0] == 0.0 and ends[-1][1] == pytest.approx(1.0, abs=1e-15)
    for (_, a), (b, _) in zip(ends, ends[1:], strict=False):
        assert a == pytest.approx(b, abs=1e-15)  # no gap, no overlap: U is exactly uniform
    # ties are ordered by the bytes, never by which token was emitted
    assert iv[1][0] < iv[2][0]


def test_mc_pvalue_has_its_size_and_its_stated_power():
    rng = np.random.default_rng(1)
    n = 5000
    p = np.array([mc_pvalue(rng.multinomial(n, np.full(BINS, 1 / BINS)), rng, 199) for _ in range(600)])
    for a in (0.05, 0.1, 0.25):  # P(p <= a) <= a: 600 draws, binomial 4-sigma slack
        assert (p <= a).mean() <= a + 4 * math.sqrt(a * (1 - a) / p.size)
    assert (p <= 0.5).mean() > 0.4  # not a test that never rejects
    # the worst shape for the chi-square at the stated TV: the deviation spread evenly over the bins
    d = tv_detectable(n, 0.05)
    alt = np.full(BINS, 1 / BINS) + np.where(np.arange(BINS) % 2, 1, -1) * 2 * d / BINS
    hits = np.mean([mc_pvalue(rng.multinomial(n, alt), rng, 199) <= 0.05 for _ in range(300)])
    assert hits >= 0.9 - 4 * math.sqrt(0.09 / 300)
    half = np.full(BINS, 1 / BINS) + np.where(np.arange(BINS) % 2, 1, -1) * d / BINS  # TV d / 2: not claimed
    assert np.mean([mc_pvalue(rng.multinomial(n, half), rng, 199) <= 0.05 for _ in range(100)]) < 0.9


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("served")
    return {
        e: generate_served(d / f"{e}.jsonl", e, responses=60, length=64, rows=ROWS, seed=3, top_logprobs=8)
        for e in ENGINES
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_lossless_logs_pass_and_bug_logs_are_flagged(logs, engine):
    res = check_served(logs[engine], replicates=999)
    assert res.positions == 60 * 64
    assert res.lossless == (engine in LOSSLESS), (engine, res.pvalue)
    assert res.impossible == 0 and res.inconsistent == 0


def test_localisation_points_at_the_bug(logs):
    res = check_served(logs["argmax"], replicates=199)
    top = next(r for r in res.by_rank if r.rank == "1")
    assert top.observed == res.positions and top.z > 10  # every token is the top one
    res = check_served(logs["union"], replicates=199)
    assert next(r for r in res.by_rank if r.rank == "1").z > 3  # the top-1 draft is over-emitted
    assert {g.group for g in res.by_temperature} == {"0.7", "1"}
    assert sum(g.positions for g in res.by_position) == res.positions
    assert "NOT LOSSLESS" in str(res) and "| 1 |" in str(res)


def test_workers_and_segments_do_not_change_the_result(logs, monkeypatch):
    monkeypatch.setattr(served_read, "SEGMENT_BYTES", 50_000)  # many units
    assert len(served_read.segments(logs["vllm"])) > 3
    one = check_served(logs["vllm"], replicates=199, seed=5)
    two = check_served(logs["vllm"], replicates=199, seed=5, workers=2)
    assert one.histogram == two.histogram and one.pvalue == two.pvalue and one.by_rank == two.by_rank
    assert one.positions == 60 * 64  # no line lost or read twice at the units' edges
    other = check_served(logs["vllm"], replicates=199, seed=6)
    assert other.histogram != one.histogram  # the seed drives the randomisation


def test_a_token_outside_a_complete_log_is_impossible(tmp_path):
    f = tmp_path / "x.jsonl"
    pos = {"token": "c", "logprob": -9999.0, "top_logprobs": [{"token": "a", "logprob": math.log(0.5)}] * 0}
    pos["top_logprobs"] = [{"token": "a", "logprob": math.log(0.5)}, {"token": "b", "logprob": math.log(0.5)}]
    f.write_text(json.dumps({"choices": [{"logprobs": {"content": [pos]}}]}) + "\n")
    res = check_served(f)
    assert res.impossible == 1 and not res.lossless and res.pvalue == 0.0


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "x.jsonl:2: not JSON"),
        ('{"choices": [{"logprobs": null}]}', "x.jsonl:2: choice 0 has no logprobs.content"),
        (
            '{"choices": [{"logprobs": {"content": [{"token": "a", "logprob": 0.0, "top_logprobs": '
            '[{"token": "a", "logprob": -0.1}, {"token": "b", "logprob": -0.1}]}]}}]}',
            "x.jsonl:2: choice 0 position 0: the top_logprobs probabilities sum to",
        ),
        (
            '{"choices": [{"logprobs": {"content": [{"token": "a", "logprob": 0.5, "top_logprobs": []}]}}]}',
            "logprob must be a number <= 0",
        ),
        (
            '{"choices": [{"logprobs": {"content": [{"token": "a", "logprob": 0.0, "top_logprobs": [3]}]}}]}',
            "top_logprobs[0]: expected an object",
        ),
        ('{"choices": [{"logprobs": {"content": [7]}}]}', "choice 0 position 0: expected an object"),
    ],
)
def test_bad_lines_are_named(tmp_path, line, message):
    f = tmp_path / "x.jsonl"
    good = {"choices": [{"logprobs": {"content": [{"token": "a", "logprob": 0.0, "top_logprobs": []}]}}]}
    f.write_text(json.dumps(good) + "\n" + line + "\n")
    with pytest.raises(ValueError, match=re.escape(message)):
        check_served(f)


def test_arguments_are_checked(tmp_path):
    with pytest.raises(FileNotFoundError):
        check_served(tmp_path / "none.jsonl")
    for kw in (dict(alpha=0.0), dict(alpha=1.5), dict(workers=0), dict(replicates=10), dict(seed=-1)):
        with pytest.raises(ValueError):
            check_served(tmp_path, **kw)
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ValueError, match="no logged positions"):
        check_served(tmp_path / "empty.jsonl")
