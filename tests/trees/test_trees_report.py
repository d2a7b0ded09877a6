"""The tree report (mdsd_fast.trees.report, `mdsd-fast trees`), the tree-level names "block" and
"traversal" of tree_value, and the bound interval of drafted trees (trees.bound_drafted)."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np
import pytest

from mdsd_fast import trees as T
from mdsd_fast.cli import main
from mdsd_fast.trees.bound import greedy_value, node_greedy
from mdsd_fast.trees.bound_drafted import drafted_bound
from mdsd_fast.trees.report import TREE_REPORT_VERIFIERS, TreeReport, t_quantile, tree_report
from tree_enum import toy_oracle

# A few real trees of every shape: first of each (draft, shape) in the shipped file.
SHAPES = ("chain4", "chain6", "b2x4", "b4x3", "kseq4x4", "kseq8x4", "eagle63d4", "eagle2k4")


@pytest.fixture(scope="module")
def shipped() -> T.TreeDataset:
    return T.load_trees()


@pytest.fixture(scope="module")
def report() -> TreeReport:
    # every verifier that applies, 6 trees per shape (about 10 s on one core)
    return tree_report(limit=6, threads=1)


def _one(ts: T.TreeDataset, shape: str, draft: str = "skip2") -> T.DraftTree:
    return ts.compact_tree(ts.select(shape=shape, draft=draft)[0])[0]


def test_compact_tree_gives_the_dense_values(shipped: T.TreeDataset) -> None:
    """The renumbered support union changes no value (tokens outside have p = q = 0 everywhere)."""
    for shape, name in (("b2x4", "rrs-wor"), ("kseq4x4", "optimal"), ("eagle2k4", "topk")):
        t = shipped.select(shape=shape, draft="skip4")[1]
        r = shipped.tree(t)
        dense = T.DraftTree(r.parent, r.token, r.p, r.q, r.draw_ptr, r.draw_child, list(r.scheme))
        small, vocab = shipped.compact_tree(t)
        assert small.V < 2000 and np.array_equal(vocab[small.token[1:]], r.token[1:])
        for v in (name, "traversal"):
            a, b = T.tree_value(dense, v).accepted, T.tree_value(small, v).accepted
            assert abs(a - b) < 1e-12, (shape, v)


def test_traversal_and_block_are_tree_value_names(shipped: T.TreeDataset) -> None:
    assert {"block", "traversal"} <= set(T.tree_verifiers())
    for shape in ("chain6", "b4x3", "kseq8x4"):
        t = _one(shipped, shape)
        v = T.tree_value(t, "traversal")
        ref = T.traversal_expected_accepted(t.parent, t.token, t.p, t.q, t.draw_ptr, t.draw_child, list(t.scheme))
        # the reach probabilities (a second recursion) sum to the expected accepted length
        assert abs(v.accepted - ref) < 1e-12 and abs(v.reach[1:].sum() - ref) < 1e-12
        assert abs(v.profile.sum() - ref) < 1e-12 and np.all(np.diff(v.profile) <= 1e-15)
    chain = _one(shipped, "chain6")
    b = T.tree_value(chain, "block")
    assert abs(b.accepted - T.tree_value(chain, "traversal").accepted) < 1e-12  # traversal = block on chains
    assert np.allclose(b.profile, T.tree_value(chain, "traversal").profile, atol=1e-12)
    with pytest.raises(ValueError, match="block verification takes a chain.*node 0 has scheme 'wor'"):
        T.tree_value(_one(shipped, "b2x4"), "block")
    with pytest.raises(ValueError, match="naive_residual"):
        T.tree_value(chain, "traversal", naive_residual=True)
    assert [v.accepted for v in T.tree_values([chain, chain], "block")] == [b.accepted] * 2


def test_sd_on_a_real_chain_is_the_product_formula(shipped: T.TreeDataset) -> None:
    t = _one(shipped, "chain6", "skip4")
    ratio = [min(1.0, t.p[i, t.token[i + 1]] / t.q[i, t.token[i + 1]]) for i in range(6)]
    assert abs(T.tree_value(t, "sd").accepted - float(np.cumprod(ratio).sum())) < 1e-12


def _applicable(t: T.DraftTree) -> list[str]:
    from mdsd_fast.trees.report import _applies

    return [n for n in TREE_REPORT_VERIFIERS if _applies(n, [t]) is None]


# chains: every registry verifier is sd at n = 1 (the same law), so sd stands for them
REAL_SIM = [("chain4", "sd,block,traversal"), ("b2x4", "rrs-wor,traversal"), ("kseq4x4", ""), ("eagle2k4", ""),
            pytest.param("b2x4", "sweep", marks=pytest.mark.slow)]  # fmt: skip


@pytest.mark.parametrize("shape, only", REAL_SIM)
def test_exact_value_matches_simulation_on_real_trees(shipped: T.TreeDataset, shape: str, only: str) -> None:
    """Every applicable verifier on one real tree: exact mean accepted length = 1,500 simulated
    verifications within 4 SE (SE <= 0.04, so a bias of 0.3 token is caught with power > 0.999).
    Registry verifiers through verify_tree, traversal through its sampler, block through block_verify."""
    t = _one(shipped, shape, "skip4")
    gen = np.random.default_rng(11)
    S = 1500
    for name in only.split(",") if only else _applicable(t):
        exact = T.tree_value(t, name).accepted
        if name == "traversal":
            out = T.traversal_verify(t.parent, t.token, t.p, t.q, t.draw_ptr, t.draw_child, list(t.scheme),
                                     samples=S, rng=gen)  # fmt: skip
            acc = np.array([len(path) for path, _ in out], dtype=float)
        elif name == "block":
            nodes = T.chain_nodes(t)
            acc = T.block_verify(t.token[nodes[1:]], t.p[nodes], t.q[nodes[:-1]], samples=S, rng=gen)[0].astype(float)
        else:
            acc = np.array([T.verify_tree(t, name, rng=gen).accepted for _ in range(S)], dtype=float)
        se = max(acc.std(ddof=1), 1e-3) / math.sqrt(S)
        assert abs(acc.mean() - exact) < 4 * se, (shape, name, acc.mean(), exact)


def test_greedy_value_is_node_greedy() -> None:
    rng = np.random.default_rng(3)
    for k in range(60):
        v = int(rng.integers(2, 7))
        p, q = rng.dirichlet(np.full(v, 0.7)), rng.dirichlet(np.full(v, 0.7))
        u = rng.integers(1, 4, v).astype(float)  # ties: tokens of one level enter together
        sch = ("iid", "wor", "greedy")[k % 3]
        n = int(rng.integers(1, v + 1)) if sch != "iid" else int(rng.integers(1, 4))
        assert abs(greedy_value(p, q, n, sch, u) - node_greedy(p, q, n, sch, u)[0]) < 1e-12


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("shape", [[2, 1], [2, 2], [3], [1, 1, 1]])
@pytest.mark.parametrize("scheme", ["iid", "wor"])
def test_bound_interval_holds_the_exact_bound(seed: int, shape: list[int], scheme: str) -> None:
    """On every tree a tiny oracle can draft, the interval holds tree_bound (the law's exact
    bound); with one level it is alpha* exactly; and on average the lower end is below the bound."""
    orc = toy_oracle(3 if shape == [2, 2] else 4, seed)
    law = [(n, scheme) for n in shape]
    exact = T.tree_bound(orc, law).value
    drafted = T.enumerate_branching(orc, shape, scheme)
    mean_low = 0.0
    for pr, t in drafted:
        b = drafted_bound(t)
        assert b.low - 1e-12 <= exact <= b.high + 1e-12
        if len(shape) == 1:
            assert b.exact and abs(b.low - exact) < 1e-12
        mean_low += pr * b.low
    assert mean_low <= exact + 1e-12
    if len(shape) > 1 and scheme == "iid":  # the interval is not trivially closed
        assert any(not drafted_bound(t).exact for _, t in drafted)


def test_bound_interval_negative_control() -> None:
    """The containment has power: the intervals of trees drafted from another law miss its bound."""
    missed = 0
    for seed in range(2):
        exact = T.tree_bound(toy_oracle(4, seed), [(2, "iid"), (1, "iid")]).value
        for _, t in T.enumerate_branching(toy_oracle(4, seed + 100), [2, 1], "iid"):
            b = drafted_bound(t)
            missed += not (b.low - 1e-12 <= exact <= b.high + 1e-12)
    assert missed > 0


@pytest.mark.parametrize("seed", range(3))
def test_bound_interval_on_kseq_and_static_trees(seed: int) -> None:
    orc = toy_oracle(3, seed)
    exact = T.kseq_bound(orc, 2, 2)
    for _, t in T.enumerate_kseq(orc, 2, 2):
        b = drafted_bound(t, kseq=True)
        assert b.low - 1e-12 <= exact <= b.high + 1e-12
    st = T.draft_static(orc, [[0], [1], [0, 0], [0, 1]])
    assert drafted_bound(st).exact  # deterministic tuples: the bound is the deterministic-set value
    assert abs(drafted_bound(st).low - T.tree_value(st, "topk").accepted) < 1e-12
    with pytest.raises(ValueError, match="depth"):
        drafted_bound(st, depth=1)


def test_bound_is_above_every_per_node_verifier(report: TreeReport) -> None:
    """In expectation over drafting every per-node verifier is below the law's bound, which is below
    the interval's upper end: the group means keep that order on the real trees (6 per shape)."""
    for r in report.records:
        if r["kind"] != "verifier" or not math.isfinite(r["tokens_per_call"]):
            continue
        b = next(x for x in report.records if x["shape"] == r["shape"] and x["verifier"] == "bound")
        assert r["tokens_per_call"] <= b["ci_high"], (r["shape"], r["verifier"])
        if r["shape"].startswith("eagle"):  # deterministic trees: bound = topk's value exactly
            assert b["exact_trees"] == b["trees"]


def test_report_rows_profiles_and_chain_formula(report: TreeReport, shipped: T.TreeDataset) -> None:
    keys = [(r["shape"], r["scheme"], r["verifier"]) for r in report.records]
    assert len(keys) == len(set(keys)) and {k[0] for k in keys} == set(SHAPES)
    rows = {(r["shape"], r["verifier"]): r for r in report.records}
    assert ("chain4", "block") in rows and ("b2x4", "block") not in rows and ("b2x4", "sd") not in rows
    # a row's value is the mean over its trees of tree_value + 1, and the t interval holds it
    idx = [m["tree"] for m in shipped.meta if m["shape"] == "kseq4x4"][:6]
    vals = np.array([T.tree_value(shipped.compact_tree(t)[0], "kseq").tokens_per_call for t in idx])
    r = rows[("kseq4x4", "kseq")]
    assert abs(r["tokens_per_call"] - vals.mean()) < 1e-12
    half = t_quantile(5) * vals.std(ddof=1) / math.sqrt(6)
    assert abs(r["ci_high"] - r["tokens_per_call"] - half) < 1e-12
    # chain formula: sd on a chain uses alpha = sum min(p, q) at the root, gamma = 4
    chains = [shipped.compact_tree(t)[0] for t in [m["tree"] for m in shipped.meta if m["shape"] == "chain4"][:6]]
    alpha = np.array([np.minimum(t.p[0], t.q[0]).sum() for t in chains])
    sd = rows[("chain4", "sd")]
    assert abs(sd["root_alpha"] - alpha.mean()) < 1e-12
    assert abs(sd["chain_formula"] - ((1 - alpha**5) / (1 - alpha)).mean()) < 1e-12
    exact = np.array([T.tree_value(t, "sd").tokens_per_call for t in chains])
    assert abs(sd["chain_error"] - (((1 - alpha**5) / (1 - alpha)) - exact).mean()) < 1e-12
    t0 = chains[0]
    prof = [p for p in report.profiles if p["shape"] == "kseq4x4" and p["verifier"] == "kseq"]
    assert [p["depth"] for p in prof] == [1, 2, 3, 4] and abs(
        sum(p["p_accepted_ge"] for p in prof) - vals.mean() + 1
    ) < 1e-12
    assert t0.N > 1
    # refusals leave the row without a value and say why
    topk = rows[("eagle63d4", "topk")]
    assert topk["refused"] == 0 or (math.isnan(topk["tokens_per_call"]) and "refused" in topk["note"])


def test_t_quantiles_against_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    for df in (31, 35, 40, 41, 50, 60, 61, 100, 120, 121, 1000):  # beyond the table: conservative, close
        assert 0.0 <= t_quantile(df) - stats.t.ppf(0.975, df) < 0.025, df
    assert all(abs(t_quantile(df) - stats.t.ppf(0.975, df)) < 1e-4 for df in range(1, 31))


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(["trees", *args])
    except SystemExit as exc:  # argparse's usage errors exit through Parser.error
        code = int(exc.code or 0)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_cli_contract(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    args = ["--shapes", "chain4,b2x4,eagle2k4", "--limit", "2", "--verifiers", "sd,rrs-wor,topk,block,traversal"]
    code, stdout, err = _cli([*args, "--out", str(out), "--no-plots"], capsys)
    assert code == 0, err
    assert "| shape" in stdout and "Findings" in stdout
    rows = list(csv.DictReader(io.StringIO((out / "trees.csv").read_text())))
    for col in ("shape", "scheme", "verifier", "tokens_per_call", "ci_low", "ci_high", "bound_low", "bound_high"):
        assert col in rows[0]
    got = {(r["shape"], r["verifier"]) for r in rows}
    assert len(got) == len(rows)
    assert got == {("chain4", v) for v in ("sd", "block", "traversal", "bound")} | {
        ("b2x4", v) for v in ("rrs-wor", "traversal", "bound")
    } | {("eagle2k4", v) for v in ("topk", "traversal", "bound")}
    bound = {r["shape"]: r for r in rows if r["verifier"] == "bound"}
    assert float(bound["chain4"]["bound_low"]) <= float(bound["chain4"]["bound_high"])
    assert bound["eagle2k4"]["tokens_per_call"] == bound["eagle2k4"]["bound_low"]  # exact there
    prof = list(csv.DictReader(io.StringIO((out / "trees_profile.csv").read_text())))
    assert {"shape", "verifier", "depth", "p_accepted_ge"} <= set(prof[0])
    assert (out / "trees.json").is_file() and (out / "trees.md").is_file()


@pytest.mark.parametrize(
    "args, option",
    [
        (["--shapes", "chain9"], "--shapes"),
        (["--verifiers", "sd,nope"], "--verifiers"),
        (["--drafts", "gpt5"], "--drafts"),
        (["--limit", "0"], "--limit"),
        (["--threads", "-1"], "--threads"),
        (["--shapes", "b2x4", "--verifiers", "sd"], "--verifiers"),
        (["--data", "missing.npz"], "--data"),
        (["--data", "junk.npz"], "--data"),
        (["--data", "zip.npz"], "--data"),
        (["--data", "lmdist.npz"], "--data"),
    ],
)
def test_cli_errors_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str], option: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "junk.npz").write_bytes(np.random.default_rng(0).bytes(3000))
    (tmp_path / "zip.npz").write_bytes(b"PK\x03\x04garbage")
    from mdsd_fast.data import default_dataset_path

    (tmp_path / "lmdist.npz").write_bytes(Path(default_dataset_path()).read_bytes())  # a dataset, not trees
    code, _, err = _cli(args, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith("mdsd-fast trees: error:") and option in lines[0], err


def test_report_does_not_depend_on_threads() -> None:
    kw = dict(shapes=["kseq4x4", "b2x4"], verifiers=["rrs", "optimal", "rrs-wor", "traversal"], limit=3)
    one, two = tree_report(threads=1, **kw), tree_report(threads=2, **kw)
    strip = [{k: v for k, v in r.items() if k != "note"} for r in one.records]
    assert strip == [{k: v for k, v in r.items() if k != "note"} for r in two.records]
    assert one.profiles == two.profiles


def test_plots_are_written(report: TreeReport, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    files = report.plot(tmp_path / "plots")  # the directory is made by the shared pyplot()
    assert files
    for f in files:
        assert Path(f).parent == tmp_path / "plots"
        assert Path(f).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
