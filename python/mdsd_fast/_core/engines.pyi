# Typed stubs of mdsd_fast._core.engines, generated with pybind11-stubgen from the built extension: regenerated, not
# edited. After changing cpp/bindings/, rebuild, then from the repository root:
#   PYTHONPATH=python MDSD_FAST_ISA=baseline pybind11-stubgen mdsd_fast._core -o /tmp/stubs
#   cp /tmp/stubs/mdsd_fast/_core/*.pyi python/mdsd_fast/_core/
#   sed -i -E 's/^(ISA|__version__): str = .*/\1: str/' python/mdsd_fast/_core/__init__.pyi
"""
vLLM's and SGLang's contracts (reference kernels).
"""
from __future__ import annotations
import numpy
import numpy.typing
import typing
__all__: list[str] = ['count_range', 'rejection_sample', 'tree_sample']
def count_range(counts: typing.Any) -> typing.Any:
    """
    (smallest, largest, sum, counts as int64) of an integer array or a list of plain ints in one
    pass, the sum exact past int64's range; None for a list NumPy would read otherwise.
    """
def rejection_sample(draft_token_ids: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], num_draft_tokens: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], cu_num_draft_tokens: typing.Annotated[numpy.typing.ArrayLike, numpy.int64] | None, draft_probs: numpy.ndarray | None, target_probs: numpy.ndarray, bonus_token_ids: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], is_greedy: typing.Annotated[numpy.typing.ArrayLike, numpy.bool] | None, uniform_probs: typing.Annotated[numpy.typing.ArrayLike, numpy.float64] | None, recovery_noise: numpy.ndarray | None, max_spec_len: typing.SupportsInt | typing.SupportsIndex, tol: typing.SupportsFloat | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> numpy.typing.NDArray[numpy.int32]:
    """
    vLLM V1's rejection_sample: int32 (B, max_spec_len + 1), -1 placeholders. Types and shapes
    and the counts checked by the caller (count_range); cu_num_draft_tokens, the ids, the
    float32 / float64 rows (read in place), the uniforms and the noise checked here.
    """
def tree_sample(candidates: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], retrive_index: typing.Annotated[numpy.typing.ArrayLike, numpy.int64] | None, retrive_next_token: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], retrive_next_sibling: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], uniform_samples: numpy.ndarray, uniform_samples_for_final_sampling: numpy.ndarray, target_probs: numpy.ndarray, draft_probs: numpy.ndarray | None, num_speculative_tokens: typing.SupportsInt | typing.SupportsIndex, verifier: str, scheme: str, threshold_single: typing.SupportsFloat | typing.SupportsIndex, threshold_acc: typing.SupportsFloat | typing.SupportsIndex, work_budget: typing.SupportsFloat | typing.SupportsIndex, tol: typing.SupportsFloat | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple:
    """
    SGLang's token-tree verification (verifier='sglang', or 'sglang-pre-35798' for the rule before
    SGLang PR #35798) or a registry verifier at every node: (predicts (B*N,), accept_index
    (B, num_speculative_tokens), accept_token_num (B,)), int32 with -1 placeholders.
    Types and shapes checked by the caller; ids, retrive_index (None: b * N + i), the uniforms,
    the tree and the rows checked here. num_speculative_tokens <= 0: the deepest tree's depth + 1.
    """
