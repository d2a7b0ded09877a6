"""The dataset format, the loader and the shipped SmolLM2 dataset (NumPy only: no torch needed)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import mdsd_fast
from mdsd_fast import optimal_acceptance
from mdsd_fast.data import (
    MAX_QUANT_L1,
    MAX_TRUNCATION,
    DatasetBuilder,
    LMDataset,
    default_dataset_path,
    from_arrays,
    load_dataset,
    top_mass_tokens,
)

V_SMOLLM2 = 49_152


@pytest.fixture(scope="module")
def shipped() -> LMDataset:
    return load_dataset()


# ------------------------------------------------------------------------------ shipped file
def test_shipped_file_size_and_location():
    path = default_dataset_path()
    assert path.exists()
    assert path.stat().st_size <= 25 * 1024 * 1024


def test_shipped_shape_and_coverage(shipped: LMDataset):
    ds = shipped
    assert ds.vocab_size == V_SMOLLM2
    assert len(ds) >= 512
    assert ds.shape == (len(ds), V_SMOLLM2)
    assert ds.temperatures == [0.7, 1.0]
    assert {"skip2", "skip4"} <= set(ds.drafts)
    assert len(ds.domains) >= 3
    assert {"instruct", "translate", "summarize"} <= set(ds.domains)
    for d in ds.drafts:
        for t in ds.temperatures:
            for dom in ds.domains:
                assert len(ds.select(draft=d, temperature=t, domain=dom)) > 0
    specs = {d: ds.draft_spec(d) for d in ds.drafts}
    assert specs["skip2"]["kind"] == "layer_skip" and len(specs["skip2"]["skip_layers"]) == 2
    assert specs["skip4"]["kind"] == "layer_skip" and len(specs["skip4"]["skip_layers"]) == 4
    assert "SmolLM2-135M" in ds.info["target"]


def test_shipped_truncation_and_sums(shipped: LMDataset):
    ds = shipped
    assert ds.p_truncation.max() <= MAX_TRUNCATION
    assert ds.q_truncation.max() <= MAX_TRUNCATION
    assert ds.column("p_quantization").max() <= MAX_QUANT_L1
    assert ds.column("q_quantization").max() <= MAX_QUANT_L1
    sp, sq = ds.row_sums()
    assert np.abs(sp - 1).max() <= 1e-6
    assert np.abs(sq - 1).max() <= 1e-6
    # the sums match the recorded truncation (float32 values: ~1e-7 rounding)
    assert np.abs(sp - (1 - ds.p_truncation)).max() <= 2e-7
    assert np.abs(sq - (1 - ds.q_truncation)).max() <= 2e-7


def test_shipped_meta_complete(shipped: LMDataset):
    meta = shipped.meta
    assert len(meta) == len(shipped)
    keys = {"draft", "temperature", "domain", "prompt_id", "position", "token", "p_truncation", "q_truncation"}
    for rec in meta:
        assert keys <= rec.keys()
        assert rec["draft"] and rec["domain"] and rec["prompt_id"]
        assert rec["temperature"] in (0.7, 1.0)
        assert 0 <= rec["position"] < 48
        assert 0 <= rec["token"] < V_SMOLLM2
    # p is shared by the drafts of one context; each (prompt, T, position) appears once per draft
    ctx = shipped.column("context")
    for d in shipped.drafts:
        assert np.unique(ctx[shipped.column("draft") == d]).size == np.unique(ctx).size


def test_shipped_sum_min_bands(shipped: LMDataset):
    for t in (0.7, 1.0):
        m = {d: shipped.select(draft=d, temperature=t).sum_min().mean() for d in shipped.drafts}
        assert 0.45 <= m["skip2"] <= 0.9, m
        assert 0.25 <= m["skip4"] <= 0.8, m
        assert m["skip4"] < m["skip2"] - 0.05, m
        if "ngram2" in m:
            assert m["ngram2"] < m["skip4"], m


def test_shipped_alpha_star_sane(shipped: LMDataset):
    sub = shipped.select(draft="skip2", temperature=0.7)[:64]
    (chunk,) = list(sub.iter_chunks(64, sparse=True))
    p, q = chunk.padded()
    a1 = optimal_acceptance(p, q, 1, "iid")
    np.testing.assert_allclose(a1, sub.sum_min(), atol=1e-6)
    a_iid = optimal_acceptance(p, q, 2, "iid")
    a_wor = optimal_acceptance(p, q, 2, "wor")
    assert np.all(a_iid >= a1 - 1e-9)
    assert np.all(a_wor >= a_iid - 1e-9)
    assert np.all(a_wor <= 1 + 1e-9)
    assert a_wor.mean() > a1.mean() + 0.02
    # the compact (padded) arrays give the same alpha* as the dense (B, V) rows
    pd, qd = sub[:3].dense()
    np.testing.assert_allclose(optimal_acceptance(pd, qd, 2, "wor"), a_wor[:3], atol=1e-9)
    np.testing.assert_allclose(
        optimal_acceptance(pd, qd, 3, "greedy"), optimal_acceptance(p[:3], q[:3], 3, "greedy"), atol=1e-9
    )


def test_shipped_dense_views(shipped: LMDataset):
    sub = shipped.select(draft="skip4", temperature=1.0, domain="translate")
    assert sub.p.shape == (len(sub), V_SMOLLM2) and sub.p.dtype == np.float32
    assert sub.q.shape == sub.p.shape
    p64, q64 = sub.dense(np.float64, renormalize=True)
    np.testing.assert_allclose(p64.sum(axis=1), 1, atol=1e-12)
    np.testing.assert_allclose(p64, sub.p, atol=1e-6)  # renormalising moves entries by <= truncation
    # chunked dense iteration reproduces the same rows
    got = np.concatenate([c.p for c in sub.iter_chunks(7, dtype=np.float32)])
    np.testing.assert_array_equal(got, sub.p)


# ------------------------------------------------------------------------------ format
def _synthetic(B: int = 8, V: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray, list[dict]]:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(V, 0.05), size=B)
    q = rng.dirichlet(np.full(V, 0.05), size=B)
    p[0, : V // 2] = 0
    p[0] /= p[0].sum()
    meta = [
        {
            "draft": "a" if i % 2 else "b",
            "temperature": 0.7 if i < B // 2 else 1.0,
            "domain": "x" if i % 3 else "y",
            "prompt_id": f"x{i}" if i % 3 else f"y{i}",
            "position": i,
            "token": i,
        }
        for i in range(B)
    ]
    return p, q, meta


@pytest.mark.parametrize("encoding", ["fixed", "float32", "float64"])
def test_round_trip(tmp_path, encoding):
    p, q, meta = _synthetic()
    ds = from_arrays(p, q, meta)
    path = ds.save(tmp_path / "d.npz", encoding=encoding)
    back = load_dataset(path)
    assert len(back) == len(ds) and back.vocab_size == ds.vocab_size
    pb, qb = back.dense()
    tol = {"fixed": MAX_QUANT_L1, "float32": 1e-7, "float64": 0.0}[encoding]
    assert np.abs(pb - p).sum(axis=1).max() <= tol + 1e-12
    assert np.abs(qb - q).sum(axis=1).max() <= tol + 1e-12
    assert back.column("p_quantization").max() <= tol + 1e-12
    for key in ("draft", "temperature", "domain", "prompt_id", "position", "token"):
        np.testing.assert_array_equal(back.column(key), ds.column(key))
    if encoding == "fixed":  # the stored sums are exact
        sp, sq = back.row_sums()
        np.testing.assert_allclose(sp, 1, atol=1e-7)
        np.testing.assert_allclose(sq, 1, atol=1e-7)


def test_selection_and_views(tmp_path):
    p, q, meta = _synthetic(12)
    ds = from_arrays(p, q, meta)
    a = ds.select(draft="a")
    assert len(a) == 6 and set(a.column("draft")) == {"a"}
    sub = ds.select(draft=["a", "b"], temperature=1.0, domain="x")
    want = [i for i, m in enumerate(meta) if m["temperature"] == 1.0 and m["domain"] == "x"]
    np.testing.assert_array_equal(sub.column("position"), want)
    np.testing.assert_array_equal(sub.dense()[0], p[want])
    np.testing.assert_array_equal(ds[2:5].p, p[2:5])
    # a saved view holds just its rows
    back = load_dataset(sub.save(tmp_path / "sub.npz", encoding="float64"))
    np.testing.assert_array_equal(back.p, p[want])
    assert back.domains == ["x"]
    assert len(ds.select(domain="nope")) == 0


def test_chunks_sparse_equals_dense():
    p, q, meta = _synthetic(10)
    ds = from_arrays(p, q, meta)
    dense = list(ds.iter_chunks(4))
    sparse = list(ds.iter_chunks(4, sparse=True))
    assert [len(c.rows) for c in dense] == [4, 4, 2]
    for dc, sc in zip(dense, sparse, strict=True):
        pd, qd = sc.dense()
        np.testing.assert_array_equal(pd, dc.p)
        np.testing.assert_array_equal(qd, dc.q)
        pp, qp = sc.padded()
        for n, scheme in ((1, "iid"), (2, "iid"), (2, "wor"), (3, "greedy")):
            np.testing.assert_allclose(
                optimal_acceptance(pp, qp, n, scheme), optimal_acceptance(dc.p, dc.q, n, scheme), atol=1e-12
            )
    np.testing.assert_allclose(ds.sum_min(), np.minimum(p, q).sum(axis=1), atol=1e-12)


def test_builder_truncation():
    rng = np.random.default_rng(3)
    V = 5000
    logits = rng.standard_normal((3, V)) * 6.0
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    b = DatasetBuilder(V, ["d1", "d2"])
    b.add(probs[0], probs[1:], prompt_id="a", domain="x", temperature=1.0, position=0, token=7)
    ds = b.build()
    assert len(ds) == 2
    assert ds.p_truncation.max() <= MAX_TRUNCATION and ds.q_truncation.max() <= MAX_TRUNCATION
    n = int(ds.column("n_tokens")[0])
    assert n < V  # something was truncated ...
    keep = top_mass_tokens(probs[0], 0.9 * MAX_TRUNCATION)
    assert np.isin(keep, ds.sparse_row(0)[0]).all()  # ... but never a token p needs
    pd, qd = ds.dense()
    np.testing.assert_allclose(pd[0], probs[0], atol=1e-6)
    np.testing.assert_allclose(qd, probs[1:], atol=1e-6)
    np.testing.assert_allclose(pd.sum(axis=1), 1 - ds.p_truncation, atol=1e-12)


def test_from_arrays_validation():
    with pytest.raises(ValueError):
        from_arrays(np.ones((2, 3)) / 3, np.ones((3, 3)) / 3)
    with pytest.raises(TypeError):
        from_arrays(np.ones((2, 3), dtype=int), np.ones((2, 3), dtype=int))
    with pytest.raises(ValueError):
        from_arrays(-np.ones((1, 3)), np.ones((1, 3)) / 3)
    ds = from_arrays(np.array([0.5, 0.5]), np.array([0.25, 0.75]))
    assert len(ds) == 1 and ds.sum_min()[0] == pytest.approx(0.75)


def test_load_rejects_other_npz(tmp_path):
    np.savez(tmp_path / "x.npz", a=np.zeros(3))
    with pytest.raises(ValueError, match="not a"):
        load_dataset(tmp_path / "x.npz")


def test_public_names_and_no_torch_import():
    assert mdsd_fast.load_dataset is load_dataset
    # mdsd_fast.data is a package of private modules; the names the flat module had stay here
    import mdsd_fast.data as data

    assert sorted(data.__all__) == sorted(
        "DEFAULT_DATASET_FILE FORMAT FORMAT_VERSION MAX_QUANT_L1 MAX_TRUNCATION SHIPPED_MODELS DatasetBuilder "
        "DenseChunk LMDataset SparseChunk default_dataset_path from_arrays load_dataset top_mass_tokens".split()
    )
    for name in [*data.__all__, "shipped_model", "write_npz"]:
        assert getattr(data, name) is not None, name
    assert data.LMDataset is mdsd_fast.LMDataset and data.from_arrays is mdsd_fast.from_arrays
    code = (
        "import sys, mdsd_fast, mdsd_fast.data, mdsd_fast.extract.distributions, mdsd_fast.cli; assert 'torch' not in sys.modules; "
        "assert 'transformers' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_cli_extract_help(capsys):
    from mdsd_fast.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["extract", "--help"])
    assert exc.value.code == 0
    assert "--default-dataset" in capsys.readouterr().out
