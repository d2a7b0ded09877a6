"""The sharded log format (mdsd_fast.logs) and its converters (mdsd_fast.logs.convert).

Round trips: random ragged rows written and read back equal, in any chunk size, with filters and a
limit; the shipped flat dataset converted to a log gives the dense rows exactly. The JSONL converter
runs on files written here in the OpenAI API's shape (``bytes`` fields, -inf and -9999 logprobs) and
refuses, naming file, line and position, a draft that scored different text. Every damaged input
(missing, cut, bit-flipped shard; broken manifest) is a ValueError naming the file.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyarrow")

import mdsd_fast as mf  # noqa: E402
from mdsd_fast.logs import LogWriter, open_logs  # noqa: E402
from mdsd_fast.logs.convert import from_dataset, from_openai_jsonl  # noqa: E402


def _side(rng: np.random.Generator, B: int, V: int, complete: bool) -> tuple[Any, ...]:
    lens = rng.integers(1, 12, size=B)
    ids = np.concatenate([rng.choice(V, k, replace=False) for k in lens])
    val = rng.random(ids.size) + 0.01
    ptr = np.concatenate(([0], np.cumsum(lens)))
    sums = np.add.reduceat(val, ptr[:-1])
    val = val / np.repeat(sums, lens) * (1.0 if complete else 0.8)
    return ptr, ids, val


def write_random(path: Path, B: int = 60, V: int = 300, seed: int = 0, **kw: Any) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    comp = rng.random(B) < 0.5
    p, q = _side(rng, B, V, True), _side(rng, B, V, True)
    scale = np.where(comp, 1.0, 0.8)
    p = (p[0], p[1], p[2] * np.repeat(scale, np.diff(p[0])))
    meta = dict(domain=np.where(np.arange(B) % 3 == 0, "code", "chat"), draft=["d1"] * B, temperature=[1.0] * B)
    with LogWriter(path, V, **kw) as w:
        w.write(p, q, p_complete=comp, q_complete=True, meta=meta)
    return dict(p=p, q=q, comp=comp, meta=meta, V=V)


def _dense(ptr: Any, ids: Any, val: Any, V: int) -> np.ndarray:
    out = np.zeros((len(ptr) - 1, V), dtype=np.float32)
    out[np.repeat(np.arange(len(ptr) - 1), np.diff(ptr)), ids] = val
    return out


def test_round_trip_in_any_chunk_size(tmp_path: Path) -> None:
    src = write_random(tmp_path / "log", rows_per_shard=17)
    logs = open_logs(tmp_path / "log")
    assert len(logs) == 60 and len(logs.shards) == 4 and [s["rows"] for s in logs.shards] == [17, 17, 17, 9]
    want_p = _dense(*src["p"], src["V"])
    for size in (1, 7, 1000):
        chunks = list(logs.iter_chunks(size))
        assert max(len(c) for c in chunks) <= size
        rid = np.concatenate([c.row_id for c in chunks])
        assert np.array_equal(rid, np.arange(60))
        got = np.concatenate([_dense(c.ptr["p"], c.ids["p"], c.probs["p"], src["V"]) for c in chunks])
        assert np.array_equal(got, want_p)  # float32 stored exactly
        comp = np.concatenate([c.complete["p"] for c in chunks])
        assert np.array_equal(comp, src["comp"])
    # filters and limit: the first 5 "code" rows in storage order
    code = list(logs.iter_chunks(4, domain="code", limit=5))
    assert np.array_equal(np.concatenate([c.row_id for c in code]), [0, 3, 6, 9, 12])
    # a TopK of the chunk is what the kernels take
    c = next(logs.iter_chunks(60))  # chunks never span shards: the first shard's 17 rows
    done = c.is_complete
    a = mf.optimal_acceptance(c.take(done).topk("p"), c.take(done).topk("q"), 2)
    p, q = _dense(*src["p"], src["V"])[:17][done], _dense(*src["q"], src["V"])[:17][done]
    assert np.array_equal(a, mf.optimal_acceptance(p.astype(np.float64), q.astype(np.float64), 2))


def test_damaged_shards_are_named(tmp_path: Path) -> None:
    write_random(tmp_path / "log", rows_per_shard=20)
    logs = open_logs(tmp_path / "log")
    f1 = tmp_path / "log" / logs.shards[1]["file"]
    data = bytearray(f1.read_bytes())
    data[len(data) // 3] ^= 0xFF  # same size: only the page checksums see it
    f1.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=f"{f1}: damaged shard"):
        for _ in open_logs(tmp_path / "log").iter_chunks(8):
            pass
    f1.write_bytes(bytes(data[:-100]))
    with pytest.raises(ValueError, match=f"{f1}: shard has .* bytes, the manifest says"):
        list(open_logs(tmp_path / "log").iter_chunks(8))
    f1.unlink()
    with pytest.raises(ValueError, match=f"{f1}: shard missing"):
        list(open_logs(tmp_path / "log").iter_chunks(8))
    (tmp_path / "log" / "manifest.json").write_text("{not json")
    with pytest.raises(ValueError, match="manifest.json: damaged manifest"):
        open_logs(tmp_path / "log")
    with pytest.raises(ValueError, match="not a log directory"):
        open_logs(tmp_path)
    with pytest.raises(FileNotFoundError, match="no such log directory"):
        open_logs(tmp_path / "nowhere")


def test_writer_refuses_bad_rows(tmp_path: Path) -> None:
    one = (np.array([0, 2]), np.array([3, 5]), np.array([0.5, 0.3]))
    ok = (np.array([0, 2]), np.array([3, 5]), np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="p: row 0 is marked complete but its probabilities sum to 0.8"):
        with LogWriter(tmp_path / "a", 10) as w:
            w.write(one, ok, p_complete=True, q_complete=True, meta={})
    assert not (tmp_path / "a").exists()  # a failed write leaves nothing behind
    with pytest.raises(ValueError, match="q: row 0 lists token 3 twice"):
        with LogWriter(tmp_path / "b", 10) as w:
            w.write(ok, (np.array([0, 2]), np.array([3, 3]), np.array([0.5, 0.5])), p_complete=1, q_complete=1, meta={})
    with pytest.raises(ValueError, match=r"p: row 0 has a token id outside \[0, 4\)"):
        with LogWriter(tmp_path / "c", 4) as w:
            w.write(one, ok, p_complete=False, q_complete=True, meta={})
    with pytest.raises(ValueError, match="unknown column 'tokens'"):
        with LogWriter(tmp_path / "d", 10) as w:
            w.write(one, ok, p_complete=False, q_complete=True, meta=dict(tokens=[1]))
    write_random(tmp_path / "e")
    with pytest.raises(ValueError, match="already holds a log"):
        LogWriter(tmp_path / "e", 300)


def test_flat_dataset_round_trip_equals_dense_rows(tmp_path: Path) -> None:
    ds = mf.load_dataset()[::41]  # 14 rows of every draft, temperature and domain
    from_dataset(ds, tmp_path / "log", rows_per_shard=5)
    logs = open_logs(tmp_path / "log")
    p, q = ds.dense(np.float32)
    meta = ds.meta
    got_p, got_q, rows = [], [], []
    for c in logs.iter_chunks(3):
        assert c.is_complete.all()
        got_p.append(_dense(c.ptr["p"], c.ids["p"], c.probs["p"], ds.vocab_size))
        got_q.append(_dense(c.ptr["q"], c.ids["q"], c.probs["q"], ds.vocab_size))
        rows.append(c)
    assert np.array_equal(np.concatenate(got_p), p) and np.array_equal(np.concatenate(got_q), q)
    first = rows[0]
    for k in ("draft", "domain", "prompt_id", "position", "temperature"):
        assert first.meta[k][0] == meta[0][k]
    assert first.meta["model"][0] == ds.info["target"]
    assert np.array_equal(np.concatenate([c.row_id for c in rows]), [m["row"] for m in meta])


def _api_line(rid: str, model: str, positions: list[tuple[str, float, list[tuple[str, float]]]]) -> str:
    content = []
    for tok, lp, tops in positions:
        entry: dict[str, Any] = dict(token=tok, logprob=lp, bytes=list(tok.encode()))
        entry["top_logprobs"] = [dict(token=t, logprob=v, bytes=list(t.encode())) for t, v in tops]
        content.append(entry)
    return json.dumps(dict(id=rid, model=model, choices=[dict(index=0, logprobs=dict(content=content))]))


def test_openai_jsonl_pair(tmp_path: Path) -> None:
    ln = math.log
    target = [
        ("Hi", ln(0.6), [("Hi", ln(0.6)), ("Hello", ln(0.3)), (" é", -9999.0)]),
        (" there", ln(0.5), [(" there", ln(0.5)), ("!", ln(0.2))]),
    ]
    draft = [
        ("Hi", ln(0.4), [("Hello", ln(0.5)), ("Hi", ln(0.4))]),
        (" there", ln(0.7), [(" there", ln(0.7)), (" you", float("-inf"))]),
    ]
    t, d = tmp_path / "t.jsonl", tmp_path / "d.jsonl"
    t.write_text(_api_line("a", "big", target) + "\n\n" + _api_line("b", "big", target[:1]) + "\n")
    d.write_text(_api_line("x", "small", draft) + "\n" + _api_line("y", "small", draft[:1]) + "\n")
    from_openai_jsonl(t, d, tmp_path / "log", vocab_size=100, temperature=0.7, domain="chat")
    c = next(open_logs(tmp_path / "log").iter_chunks(10))
    assert len(c) == 3 and not c.complete["p"].any() and not c.complete["q"].any()
    assert list(c.meta["model"]) == ["big"] * 3 and list(c.meta["draft"]) == ["small"] * 3
    assert list(c.meta["prompt_id"]) == ["a", "a", "b"] and list(c.meta["position"]) == [0, 1, 0]
    assert c.meta["temperature"][0] == 0.7 and c.meta["domain"][0] == "chat"
    # ids by first appearance of the bytes: Hi=0, Hello=1, " é"=2 (dropped: -9999), " there"=3, "!"=4
    end = c.ptr["p"][1]
    row0_p = dict(zip(c.ids["p"][:end].tolist(), c.probs["p"][:end].tolist(), strict=True))
    assert row0_p == pytest.approx({0: 0.6, 1: 0.3})
    assert c.mass["q"][1] == pytest.approx(0.7)  # -inf dropped
    lo, hi = mf.acceptance_bounds(c.topk("p"), c.topk("q"), 1)
    assert np.all(lo <= hi)


def test_openai_mismatch_is_named(tmp_path: Path) -> None:
    ln = math.log
    t, d = tmp_path / "t.jsonl", tmp_path / "d.jsonl"
    t.write_text(_api_line("a", "m", [("Hi", ln(0.5), [("Hi", ln(0.5))]), ("!", ln(0.5), [("!", ln(0.5))])]) + "\n")
    d.write_text(_api_line("a", "m", [("Hi", ln(0.5), [("Hi", ln(0.5))]), ("?", ln(0.5), [("?", ln(0.5))])]) + "\n")
    with pytest.raises(ValueError, match=rf"{t}:1 and {d}:1: choice 0 position 1: the target scored token b'!'"):
        from_openai_jsonl(t, d, tmp_path / "log", vocab_size=10)
    assert not (tmp_path / "log").exists()
    d.write_text(_api_line("a", "m", [("Hi", ln(0.5), [("Hi", ln(0.5))])]) + "\n")
    with pytest.raises(ValueError, match="choice 0 has 2 positions in the target and 1 in the draft"):
        from_openai_jsonl(t, d, tmp_path / "log", vocab_size=10)
    d.write_text(_api_line("a", "m", [("Hi", ln(0.5), [("Hi", ln(0.5)), ("Hi", ln(0.2))]), ("!", 0.0, [])]) + "\n")
    with pytest.raises(ValueError, match="listed twice in top_logprobs"):
        from_openai_jsonl(t, d, tmp_path / "log", vocab_size=10)
    d.write_text("not json\n")
    with pytest.raises(ValueError, match=rf"{d}:1: not JSON"):
        from_openai_jsonl(t, d, tmp_path / "log", vocab_size=10)
    d.write_text(_api_line("a", "m", [("Hi", ln(0.5), [("Hi", ln(0.5))]), ("!", ln(0.5), [("!", ln(0.5))])]) + "\n")
    with pytest.raises(
        ValueError, match=rf"{t}:1 choice 0 position 1: token b'!' is distinct token number 2 .* vocab_size = 1"
    ):
        from_openai_jsonl(t, d, tmp_path / "log", vocab_size=1)
