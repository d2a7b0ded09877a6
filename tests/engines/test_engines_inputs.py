"""The engine kernels' boundary: integers range-checked before any cast, outputs refused in bytes
before they are allocated, float32 rows and torch tensors read in place (no (T, V) copy), and the
validation the kernels do in their own pass (same errors whatever the thread count)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from engine_reference import chain_case, ref_chain, tree_case
from mdsd_fast.engines import rejection_sample, tree_speculative_sampling
from mdsd_fast.limits import LIMITS


def test_unsigned_counts_are_checked_before_the_cast() -> None:
    """A uint64 count of 2**64 - 1 used to become -1 after the cast: a read of row -1 and a write
    before the output buffer (a crash); it is refused in its own dtype."""
    with pytest.raises(ValueError, match="num_draft_tokens: a count of 18446744073709551615 is more than the T = 0"):
        rejection_sample(
            np.zeros(0, np.int64), np.array([2**64 - 1, 1], dtype=np.uint64), None, np.zeros((0, 4)), [3, 2]
        )
    tp = np.full((2, 4), 0.25)
    with pytest.raises(ValueError, match="num_draft_tokens: a count of 18446744073709551615"):
        rejection_sample(np.zeros(2, np.int64), np.array([2**64 - 1, 3], dtype=np.uint64), None, tp, [3, 2],
                         uniform_probs=[0.5, 0.5], recovery_noise=np.ones((2, 4)))  # fmt: skip
    with pytest.raises(ValueError, match="draft_token_ids: id 18446744073709551615 outside"):
        rejection_sample(np.array([2**64 - 1], np.uint64), [1], None, tp[:1], [0], uniform_probs=[0.5],
                         recovery_noise=np.ones((1, 4)))  # fmt: skip
    with pytest.raises(ValueError, match="retrive_next_token: id 18446744073709551615 outside"):
        tree_speculative_sampling([[0, 1]], np.array([[2**64 - 1, 0]], np.uint64), [[-1, -1]],
                                  np.full((1, 2, 4), 0.25), uniform_samples=[[0.5, 0.5]],
                                  uniform_samples_for_final_sampling=[0.5])  # fmt: skip


def test_output_refused_in_bytes_before_it_is_allocated() -> None:
    """max_spec_len = 2**31 - 2 on an input with no drafts used to allocate 16 GiB and copy 8 GiB."""
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"max_spec_len: an output of 1 x 2147483647 int32 tokens would need "
                                             r"8,589,934,588 bytes, above the limit"):  # fmt: skip
            rejection_sample(np.zeros(0, np.int64), [0], None, np.zeros((0, 4)), [3], max_spec_len=2**31 - 2)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20
    # the same refusal one token above the limit
    width = LIMITS["max_alloc_bytes"] // 4
    with pytest.raises(ValueError, match="max_spec_len: an output of 1 x"):
        rejection_sample(np.zeros(0, np.int64), [0], None, np.zeros((0, 4)), [3], max_spec_len=width)
    assert rejection_sample(np.zeros(0, np.int64), [0], None, np.zeros((0, 4)), [3], max_spec_len=7).shape == (1, 8)


def _peak(fn) -> int:  # type: ignore[no-untyped-def]
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _chain(T: int, V: int, dtype: type, rng: np.random.Generator) -> dict:
    p = rng.dirichlet(np.ones(V), size=T).astype(dtype)
    q = rng.dirichlet(np.ones(V), size=T).astype(dtype)
    B = T // 4
    return dict(
        draft_token_ids=rng.integers(0, V, T), num_draft_tokens=[4] * B, draft_probs=q, target_probs=p,
        bonus_token_ids=rng.integers(0, V, (B, 1)), uniform_probs=rng.random(T),
        recovery_noise=rng.exponential(size=(B, V)).astype(dtype),
    )  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_are_read_in_place(dtype: type) -> None:
    """No copy of the (T, V) rows or the (B, V) noise, float32 included (it used to be widened to
    float64 first): the peak of the call stays far below one row block."""
    rng = np.random.default_rng(5)
    c = _chain(64, 4096, dtype, rng)
    block = c["target_probs"].nbytes
    assert _peak(lambda: rejection_sample(**c, threads=1)) < block // 8
    B = 4
    tp = rng.dirichlet(np.ones(4096), size=B * 3).astype(dtype).reshape(B, 3, 4096)
    kw = dict(uniform_samples=rng.random((B, 3)), uniform_samples_for_final_sampling=rng.random(B))
    tree = ([[0, 1, 2]] * B, [[1, -1, -1]] * B, [[-1, 2, -1]] * B, tp)
    assert _peak(lambda: tree_speculative_sampling(*tree, **kw, threads=1)) < tp.nbytes // 8


def test_padded_vocabulary_and_torch_are_read_in_place() -> None:
    """Rows evenly spaced (a slice of a padded vocabulary) are read where they are; a CPU torch
    tensor through its NumPy view; both give the tokens of a contiguous float64 copy."""
    rng = np.random.default_rng(6)
    c = _chain(64, 4096, np.float32, rng)
    want = rejection_sample(**{k: (v.astype(np.float64) if k.endswith("probs") and v.ndim == 2 else v)
                               for k, v in c.items()})  # fmt: skip
    padded = np.zeros((64, 4096 + 100), dtype=np.float32)
    padded[:, :4096] = c["target_probs"]
    sliced = {**c, "target_probs": padded[:, :4096]}
    got: list = []
    assert _peak(lambda: got.append(rejection_sample(**sliced))) < padded.nbytes // 8
    np.testing.assert_array_equal(got[0], want)
    torch = pytest.importorskip("torch")
    tc = {k: torch.from_numpy(np.asarray(v)) for k, v in c.items() if not isinstance(v, list)}
    tc["num_draft_tokens"] = c["num_draft_tokens"]
    assert _peak(lambda: got.append(rejection_sample(**tc))) < c["target_probs"].nbytes // 8
    np.testing.assert_array_equal(got[1].numpy(), want)


@pytest.mark.parametrize("seed", range(3))
def test_float32_gives_the_bits_of_its_float64_conversion(seed: int) -> None:
    rng = np.random.default_rng(80 + seed)
    for _ in range(100):
        c = chain_case(rng, np.float32)
        wide = {k: (np.asarray(v, dtype=np.float64) if isinstance(v, np.ndarray) and v.dtype == np.float32 else v)
                for k, v in c.items()}  # fmt: skip
        got = rejection_sample(**c, threads=1)
        np.testing.assert_array_equal(got, rejection_sample(**wide, threads=1))
        np.testing.assert_array_equal(got, ref_chain(c))
        t = tree_case(rng, np.float32)
        t64 = {k: (np.asarray(v, dtype=np.float64) if isinstance(v, np.ndarray) and v.dtype == np.float32 else v)
               for k, v in t.items()}  # fmt: skip
        for a, b in zip(tree_speculative_sampling(**t), tree_speculative_sampling(**t64), strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("threads", [1, 4])
def test_validation_in_the_kernel_pass_names_the_first_row(threads: int) -> None:
    rng = np.random.default_rng(9)
    c = _chain(64, 16, np.float32, rng)
    tp = c["target_probs"].copy()
    tp[37, 3], tp[50, 1], tp[12, 0] = np.nan, -1.0, tp[12, 0] + 0.5
    with pytest.raises(ValueError, match="target_probs: row 12 sums to"):
        rejection_sample(**{**c, "target_probs": tp}, threads=threads)
    tp[12, 0] -= 0.5
    with pytest.raises(ValueError, match="target_probs: row 37 contains NaN or inf"):
        rejection_sample(**{**c, "target_probs": tp}, threads=threads)
    dp = c["draft_probs"].copy()
    dp[40] = 0.0  # a zero draft row is allowed; a negative entry is not
    dp[41, 2] = -0.5
    with pytest.raises(ValueError, match="draft_probs: row 41 has negative entries"):
        rejection_sample(**{**c, "draft_probs": dp}, threads=threads)
    noise = c["recovery_noise"].copy()
    noise[7, 5] = np.inf
    with pytest.raises(ValueError, match="recovery_noise: Exp"):
        rejection_sample(**{**c, "recovery_noise": noise}, threads=threads)
    tree = tree_case(rng, np.float64)
    bad = tree["target_probs"].copy()
    bad[-1, -1, 0] = np.nan
    B, N, _ = bad.shape
    with pytest.raises(ValueError, match=f"target_probs: row {B * N - 1} contains NaN or inf"):
        tree_speculative_sampling(**{**tree, "target_probs": bad}, threads=threads)


def test_counts_are_read_in_one_pass() -> None:
    """A list of plain ints is read without NumPy, to the same int64 counts; anything NumPy would
    read otherwise (bools, floats, NumPy scalars, past int64, empty) goes through NumPy."""
    from mdsd_fast import _core

    for counts in ([3, -1, 7], [0], [2**62, 2**62, 2**62], [-(2**63), 2**63 - 1]):
        for given in (counts, np.array(counts, dtype=np.int64)):
            lo, hi, total, arr = _core.engines.count_range(given)
            assert (lo, hi, total) == (min(counts), max(counts), sum(counts))  # exact past int64
            assert arr.dtype == np.int64 and arr.tolist() == counts
    for other in ([], [1, True], [1, 2.0], [1, np.int64(2)], [2**63], [1, None]):
        assert _core.engines.count_range(other) is None
    tp = np.full((3, 2), 0.5)
    args = dict(draft_token_ids=[0, 1, 0], draft_probs=None, target_probs=tp, uniform_probs=[0.5] * 3)
    want = rejection_sample(num_draft_tokens=np.array([1, 2]), bonus_token_ids=[1, 0], recovery_noise=np.ones((2, 2)),
                            **args)  # fmt: skip
    np.testing.assert_array_equal(rejection_sample(num_draft_tokens=[1, 2], bonus_token_ids=[1, 0],
                                                   recovery_noise=np.ones((2, 2)), **args), want)  # fmt: skip
    np.testing.assert_array_equal(rejection_sample(num_draft_tokens=[True, 2], bonus_token_ids=[1, 0],
                                                   recovery_noise=np.ones((2, 2)), **args), want)  # fmt: skip
    with pytest.raises(TypeError, match="num_draft_tokens: expected a 1-D sequence of ints, got float64"):
        rejection_sample(num_draft_tokens=[1, 2.0], bonus_token_ids=[1, 0], recovery_noise=np.ones((2, 2)), **args)
    with pytest.raises(ValueError, match="num_draft_tokens: a count of 9223372036854775808 is more than the T = 3"):
        rejection_sample(num_draft_tokens=[2**63], bonus_token_ids=[1], recovery_noise=np.ones((1, 2)), **args)


def test_direct_kernel_calls_check_what_they_index_with() -> None:
    """The compiled entry points refuse counts, ids, prefix sums, tree links and slots that would
    index out of bounds, even when called without the Python layer's checks."""
    from mdsd_fast import _core

    p = np.full((2, 4), 0.25, np.float32)
    u, noise = np.full(2, 0.5), np.ones((1, 4), np.float32)
    ids, counts, bonus = np.array([0, 1]), np.array([2]), np.array([0])
    assert _core.engines.rejection_sample(ids, counts, None, None, p, bonus, None, u, noise, 2, 1e-4, 1).shape == (1, 3)
    assert _core.engines.rejection_sample(ids, counts, np.array([2]), None, p, bonus, None, u, noise, 3, 1e-4,
                                          1).shape == (1, 4)  # fmt: skip
    for bad in (
        dict(ids=np.array([0, 4])),
        dict(ids=np.array([-2, 0])),
        dict(ids=np.array([[0, 1]])),
        dict(counts=np.array([3])),
        dict(counts=np.array([-1])),
        dict(counts=np.array([1, 1])),  # B = 2: bonus has one entry
        dict(cu=np.array([1])),
        dict(cu=np.array([2, 2])),
        dict(bonus=np.array([4])),
        dict(width=-1),
        dict(width=2**62),
        dict(width=1),
        dict(u=None),
        dict(u=np.full(3, 0.5)),
    ):
        a = {"ids": ids, "counts": counts, "cu": None, "bonus": bonus, "width": 2, "u": u, **bad}
        with pytest.raises((ValueError, TypeError)):
            _core.engines.rejection_sample(a["ids"], a["counts"], a["cu"], None, p, a["bonus"], None, a["u"], noise,
                                           a["width"], 1e-4, 1)  # fmt: skip
    tp = np.full((1, 3, 4), 0.25)
    ok = dict(cand=np.array([[0, 1, 2]]), idx=np.array([[0, 1, 2]]), nxt=np.array([[1, -1, -1]]),
              sib=np.array([[-1, 2, -1]]), coins=np.full((1, 3), 0.5))  # fmt: skip
    final = np.full(1, 0.5)
    want = _core.engines.tree_sample(ok["cand"], None, ok["nxt"], ok["sib"], ok["coins"], final, tp, None, 0,
                                     "sglang", "", 1.0, 1.0, 1e7, 1e-4, 1)  # fmt: skip
    for got, exp in zip(want, tree_speculative_sampling([[0, 1, 2]], [[1, -1, -1]], [[-1, 2, -1]], tp,
                        uniform_samples=ok["coins"], uniform_samples_for_final_sampling=final), strict=True):  # fmt: skip
        np.testing.assert_array_equal(got, exp)
    for bad in (dict(cand=np.array([[0, 1, 4]])), dict(idx=np.array([[0, 1, 3]])), dict(idx=np.array([[0, 1, 1]])),
                dict(idx=np.array([0, 1, 2])), dict(nxt=np.array([[3, -1, -1]])), dict(sib=np.array([[-1, -2, -1]])),
                dict(cand=np.array([0, 1, 2])), dict(coins=np.full((1, 3), 1.0)), dict(coins=np.full(3, 0.5))):  # fmt: skip
        a = {**ok, **bad}
        with pytest.raises(ValueError):
            _core.engines.tree_sample(a["cand"], a["idx"], a["nxt"], a["sib"], a["coins"], final, tp, None, 0,
                                      "sglang", "", 1.0, 1.0, 1e7, 1e-4, 1)  # fmt: skip


_CHAIN = dict(draft_token_ids=[1, 0], num_draft_tokens=[2, 0], draft_probs=np.full((2, 3), 1 / 3),
              target_probs=np.array([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]]), bonus_token_ids=[[2], [1]],
              uniform_probs=[0.5, 0.5], recovery_noise=np.ones((2, 3)))  # fmt: skip
_TREE = dict(candidates=[[0, 1, 2]], retrive_next_token=[[1, -1, -1]], retrive_next_sibling=[[-1, 2, -1]],
             target_probs=np.full((1, 3, 3), 1 / 3), uniform_samples=[[0.5, 0.5, 0.5]],
             uniform_samples_for_final_sampling=[0.5])  # fmt: skip


@pytest.mark.parametrize(
    ("fn", "change", "message"),
    [
        (rejection_sample, {"draft_token_ids": np.array([1, 3], np.int8)}, "draft_token_ids: id 3 outside [-1, 3)"),
        (rejection_sample, {"bonus_token_ids": [2, -1]}, "bonus_token_ids: id -1 outside [0, 3)"),
        (rejection_sample, {"cu_num_draft_tokens": [2, 5]}, "cu_num_draft_tokens: id 5 outside [0, 3)"),
        (rejection_sample, {"cu_num_draft_tokens": [1, 2]},
         "cu_num_draft_tokens: not the inclusive prefix sums of num_draft_tokens"),
        (rejection_sample, {"uniform_probs": None}, "uniform_probs: needed (shape (T,)) when some request is not greedy"),
        (rejection_sample, {"recovery_noise": None},
         "recovery_noise: needed (shape (B, V), Exp(1)) when some request is not greedy"),
        (rejection_sample, {"max_spec_len": 1}, "max_spec_len: expected an integer >= 2, got 1"),
        (rejection_sample, {"num_draft_tokens": [3, -1]}, "num_draft_tokens: counts must be >= 0, got -1"),
        (tree_speculative_sampling, {"uniform_samples": np.array([[0.5, 1.5, 0.5]], np.float32)},
         "uniform_samples: uniforms must lie in [0, 1), got np.float32(1.5)"),
        (tree_speculative_sampling, {"uniform_samples_for_final_sampling": [np.nan]},
         "uniform_samples_for_final_sampling: uniforms must lie in [0, 1), got np.float64(nan)"),
        (tree_speculative_sampling, {"retrive_index": [[0, 2, 2]]},
         "retrive_index: entries must be distinct (each node owns one slot of predicts)"),
        (tree_speculative_sampling, {"retrive_index": [[0, 1, 3]]}, "retrive_index: id 3 outside [0, 3)"),
        (tree_speculative_sampling, {"retrive_next_token": [[1, -2, -1]]}, "retrive_next_token: id -2 outside [-1, 3)"),
        (tree_speculative_sampling, {"candidates": np.array([[0, 1, 2**40]])}, "candidates: id 1099511627776 outside [0, 3)"),
    ],
)  # fmt: skip
def test_checks_in_the_compiled_entries_keep_their_messages(fn, change: dict, message: str) -> None:  # type: ignore[no-untyped-def]
    """The value checks done in the compiled entries raise the messages the Python layer raised, word for word."""
    base = _CHAIN if fn is rejection_sample else _TREE
    with pytest.raises(ValueError) as err:
        fn(**{**base, **change})
    assert str(err.value) == message
