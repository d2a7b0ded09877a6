"""The engine reference kernels (mdsd_fast.engines) token for token, and their input rules.

Independent numpy re-implementations of vLLM V1's ``rejection_sample`` and SGLang's
``tree_speculative_sampling_target_only`` (tests/_support/engine_reference.py, written from the engines'
code) are reproduced exactly by the C++ kernels under the same uniforms on random batches
(ragged draft counts including 0, random trees, float32 and float64, n-gram drafts, greedy
requests, thresholds) and vLLM's greedy cases; the same with torch tensors; results independent
of the thread count; errors that name the argument.
The laws (losslessness, registry verifiers per node) are in tests/engines/test_engines_law.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import mdsd_fast as mf
from engine_reference import chain_case, random_rows, random_tree, ref_chain, ref_tree, tree_case
from mdsd_fast.engines import TREE_VERIFIERS, rejection_sample, tree_speculative_sampling

# ----------------------------------------------------------------------------- token for token


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_vllm_token_for_token(dtype: type) -> None:
    rng = np.random.default_rng(11)
    for _ in range(300):
        c = chain_case(rng, dtype)
        want = ref_chain(c)
        got = rejection_sample(**c, threads=1)
        assert got.dtype == np.int32 and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sglang_token_for_token(dtype: type) -> None:
    """The rule before SGLang PR #35798 (tests/engines/test_engines_upstream.py has the current one);
    thresholds float32 numbers, as SGLang's kernel takes them."""
    rng = np.random.default_rng(12)
    for it in range(300):
        c = tree_case(rng, dtype)
        th = (1.0, 1.0) if it % 3 else (float(np.float32(rng.random())), float(np.float32(rng.random())))
        got = tree_speculative_sampling(
            **c, verifier="sglang-pre-35798", threshold_single=th[0], threshold_acc=th[1], threads=1
        )
        for g, w in zip(got, ref_tree(c, *th), strict=True):
            assert g.dtype == np.int32
            np.testing.assert_array_equal(g, w)


def test_threads_do_not_change_results() -> None:
    rng = np.random.default_rng(13)
    B, N, V = 400, 7, 6
    c = tree_case(rng, np.float64)
    trees = [random_tree(rng, N) for _ in range(B)]
    c.update(
        candidates=rng.integers(0, V, size=(B, N)),
        retrive_next_token=np.stack([t[0] for t in trees]),
        retrive_next_sibling=np.stack([t[1] for t in trees]),
        target_probs=random_rows(rng, B * N, V, np.float64).reshape(B, N, V),
        draft_probs=np.full((B, N, V), 1.0 / V),  # every token draftable: any tuple is an iid tuple
        uniform_samples=rng.random((B, N)),
        uniform_samples_for_final_sampling=rng.random(B),
        retrive_index=None,
        num_speculative_tokens=None,
    )
    for verifier in ("sglang", "rrs", "optimal"):
        kw = dict(c) if verifier != "sglang" else {**c, "draft_probs": None}
        runs = [tree_speculative_sampling(**kw, verifier=verifier, threads=t) for t in (1, 2, 5)]
        for r in runs[1:]:
            for a, b in zip(runs[0], r, strict=True):
                np.testing.assert_array_equal(a, b)
    chain = chain_case(np.random.default_rng(14), np.float64)
    np.testing.assert_array_equal(rejection_sample(**chain, threads=1), rejection_sample(**chain, threads=3))


def test_vllm_greedy_cases() -> None:
    """The greedy cases of vLLM's tests/v1/sample/test_rejection_sampler.py (temperature 0)."""
    V = 8

    def run(spec: list[list[int]], argmax: list[list[int]], bonus: list[int]) -> list[list[int]]:
        flat = [t for s in spec for t in s]
        target = np.eye(V)[[t for a in argmax for t in a]].reshape(len(flat), V)
        greedy = np.ones(len(spec), dtype=bool)
        out = rejection_sample(flat, [len(s) for s in spec], None, target, [[b] for b in bonus], is_greedy=greedy)
        return out.tolist()

    assert run([[1, 2, 3]], [[1, 2, 3]], [4]) == [[1, 2, 3, 4]]  # perfect match: bonus appended
    assert run([[1, 2, 3]], [[1, 5, 3]], [4]) == [[1, 5, -1, -1]]  # early mismatch
    assert run([[1, 2], [3]], [[1, 2], [7]], [5, 4]) == [[1, 2, 5], [7, -1, -1]]  # ragged
    assert run([[], [3]], [[], [3]], [5, 4]) == [[5, -1], [3, 4]]  # no drafts: the bonus alone


def test_vllm_edge_rules() -> None:
    """q(x) = 0 rejects even when p(x) > 0; u = 0 accepts even p(x) = 0; the recovered token
    of an all-zero residual is token 0 (first argmax); padded zero columns are never recovered."""
    p = np.array([[0.5, 0.5, 0.0, 0.0]])
    q0 = np.array([[1.0, 0.0, 0.0, 0.0]])
    noise = np.ones((1, 4))
    kw = dict(bonus_token_ids=[[3]], recovery_noise=noise)
    assert rejection_sample([1], [1], q0, p, uniform_probs=[0.0], **kw).tolist() == [[1, -1]]
    out = rejection_sample([2], [1], np.array([[0.0, 0.0, 1.0, 0.0]]), p, uniform_probs=[0.0], **kw)
    assert out.tolist() == [[2, 3]]  # p/q = 0 >= u = 0: accepted, as vLLM does
    out = rejection_sample([0], [1], p, p, uniform_probs=[0.999], **kw)
    assert out.tolist() == [[0, 3]]  # p = q: p/q = 1 >= u
    # n-gram draft with p(x) = 0: rejected, recovered from p with x zeroed
    out = rejection_sample(
        [3], [1], None, p, uniform_probs=[0.5], bonus_token_ids=[[3]], recovery_noise=[[2.0, 1.0, 1.0, 1.0]]
    )
    assert out.tolist() == [[1, -1]]


# ----------------------------------------------------------------------------- torch, validation


def test_torch_tensors_in_and_out() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(51)
    for dtype in (np.float32, np.float64):
        c = chain_case(rng, dtype)
        t = {k: torch.from_numpy(np.asarray(v)) if isinstance(v, np.ndarray) else v for k, v in c.items()}
        got = rejection_sample(**t)
        assert isinstance(got, torch.Tensor) and got.dtype == torch.int32
        np.testing.assert_array_equal(got.numpy(), ref_chain(c))
        tc = tree_case(rng, dtype)
        tt = {k: torch.from_numpy(np.asarray(v)) if isinstance(v, np.ndarray) else v for k, v in tc.items()}
        res = tree_speculative_sampling(**tt)
        for g, w in zip(res, ref_tree(tc), strict=True):
            assert isinstance(g, torch.Tensor) and g.dtype == torch.int32
            np.testing.assert_array_equal(g.numpy(), w)
    with pytest.raises(TypeError, match="target_probs"):
        rejection_sample([0], [1], None, torch.ones(1, 2, dtype=torch.bfloat16) / 2, [[0]], is_greedy=np.ones(1, bool))


def _chain_ok() -> dict:
    return dict(
        draft_token_ids=[1, 0],
        num_draft_tokens=[2, 0],
        draft_probs=np.full((2, 3), 1 / 3),
        target_probs=np.array([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]]),
        bonus_token_ids=[[2], [1]],
        uniform_probs=[0.5, 0.5],
        recovery_noise=np.ones((2, 3)),
    )


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"num_draft_tokens": [1, 0]}, ValueError, "num_draft_tokens: the counts sum to 1"),
        ({"num_draft_tokens": [3, -1]}, ValueError, "num_draft_tokens: counts must be >= 0"),
        ({"cu_num_draft_tokens": [1, 2]}, ValueError, "cu_num_draft_tokens"),
        ({"draft_token_ids": [1, 3]}, ValueError, r"draft_token_ids: id 3 outside \[-1, 3\)"),
        ({"draft_token_ids": [1.0, 0.0]}, TypeError, "draft_token_ids: expected integer ids"),
        ({"bonus_token_ids": [[2], [-1]]}, ValueError, "bonus_token_ids: id -1"),
        ({"uniform_probs": [0.5, 1.0]}, ValueError, r"uniform_probs: uniforms must lie in \[0, 1\)"),
        ({"uniform_probs": None}, ValueError, "uniform_probs: needed"),
        ({"recovery_noise": np.zeros((2, 3))}, ValueError, "recovery_noise: Exp"),
        ({"target_probs": np.array([[0.2, 0.3, np.nan], [0.6, 0.2, 0.2]])}, ValueError, "target_probs: row 0"),
        ({"target_probs": np.array([[0.2, 0.3, 0.4], [0.6, 0.2, 0.2]])}, ValueError, "target_probs: row 0 sums"),
        ({"draft_probs": np.ones((2, 3))}, ValueError, "draft_probs: row 0 sums to 3"),
        ({"draft_probs": np.ones((2, 4)) / 4}, ValueError, r"draft_probs: expected shape \(2, 3\)"),
        ({"max_spec_len": 1}, ValueError, "max_spec_len"),
        ({"is_greedy": [1, 0]}, TypeError, "is_greedy: expected bools"),
    ],
)
def test_vllm_errors_name_the_argument(change: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        rejection_sample(**{**_chain_ok(), **change})


def _tree_ok() -> dict:
    return dict(
        candidates=[[0, 1, 2]],
        retrive_next_token=[[1, -1, -1]],
        retrive_next_sibling=[[-1, 2, -1]],
        target_probs=np.full((1, 3, 3), 1 / 3),
        uniform_samples=[[0.5, 0.5, 0.5]],
        uniform_samples_for_final_sampling=[0.5],
        draft_probs=np.full((1, 3, 3), 1 / 3),
        verifier="rrs-wor",
    )


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"retrive_next_sibling": [[-1, 2, 1]]}, ValueError, "reached twice from the root"),
        ({"retrive_next_token": [[1, 0, -1]]}, ValueError, "reached twice from the root"),
        ({"retrive_next_token": [[3, -1, -1]]}, ValueError, r"retrive_next_token: id 3 outside \[-1, 3\)"),
        ({"retrive_index": [[0, 1, 1]]}, ValueError, "retrive_index: entries must be distinct"),
        ({"candidates": [[0, 1, 5]]}, ValueError, "candidates: id 5"),
        ({"uniform_samples": [[0.5, -0.1, 0.5]]}, ValueError, "uniform_samples: uniforms"),
        ({"uniform_samples_for_final_sampling": [1.5]}, ValueError, "uniform_samples_for_final_sampling"),
        ({"verifier": "optimal-lp"}, ValueError, "verifier: expected one of"),
        ({"verifier": "sd"}, ValueError, "request 0, node 0 .* the node has 2 children"),
        ({"candidates": [[0, 1, 1]]}, ValueError, "request 0, node 0 .*appears twice"),
        ({"draft_probs": None}, ValueError, "draft_probs: verifier 'rrs-wor' needs"),
        ({"scheme": "iid"}, ValueError, "scheme: verifier 'rrs-wor' verifies 'wor'"),
        ({"threshold_acc": 0.5}, ValueError, "only SGLang's rules have thresholds"),
        (
            {"verifier": "sglang", "threshold_single": 2.0},
            ValueError,
            r"threshold_single: expected a number in \[0, 1\]",
        ),
        ({"num_speculative_tokens": 0}, ValueError, "num_speculative_tokens"),
    ],
)
def test_tree_errors_name_the_argument(change: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        tree_speculative_sampling(**{**_tree_ok(), **change})


def test_tree_verifiers_list() -> None:
    assert TREE_VERIFIERS[:2] == ("sglang", "sglang-pre-35798") and "optimal-lp" not in TREE_VERIFIERS
    assert set(TREE_VERIFIERS[2:]) == set(mf.verifiers) - {"optimal-lp"}


def test_uniforms_only_where_read() -> None:
    """Uniforms and noise are needed only when a non-greedy request has drafts; an empty batch works."""
    tp = np.eye(3)[[1]]
    out = rejection_sample([1], [1, 0], None, tp, [[2], [0]], is_greedy=np.array([True, False]))
    assert out.tolist() == [[1, 2], [0, -1]]
    empty = rejection_sample(np.zeros(0, dtype=np.int64), [], None, np.zeros((0, 3)), np.zeros((0, 1), dtype=np.int64))
    assert empty.shape == (0, 1)
    with pytest.raises(ValueError, match="num_speculative_tokens: at most N = 3"):
        tree_speculative_sampling(**{**_tree_ok(), "num_speculative_tokens": 4})
    with pytest.raises(ValueError, match="request 0, node 0 .*draft_probs: the node's row has zero mass"):
        tree_speculative_sampling(**{**_tree_ok(), "draft_probs": np.zeros((1, 3, 3))})


def test_layouts_and_byte_orders_give_the_same_tokens() -> None:
    rng = np.random.default_rng(61)
    c = chain_case(rng, np.float64)
    while c["draft_probs"] is None:
        c = chain_case(rng, np.float64)
    want = rejection_sample(**c)
    T, V = c["target_probs"].shape
    wide = np.zeros((T, 2 * V))
    wide[:, ::2] = c["target_probs"]
    other = {
        **c,
        "target_probs": wide[:, ::2],  # strided
        "draft_probs": c["draft_probs"].astype(">f8"),  # big-endian
        "draft_token_ids": c["draft_token_ids"].astype(">i4"),
        "recovery_noise": np.asfortranarray(c["recovery_noise"]),
    }
    np.testing.assert_array_equal(rejection_sample(**other), want)
