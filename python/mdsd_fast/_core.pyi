# Typed stubs of the C++ extension (generated with pybind11-stubgen from the built module; regenerate
# with `pybind11-stubgen mdsd_fast._core -o /tmp/stubs` after changing the bindings).
"""
mdsd_fast C++ core: dual kernels, draft-set enumeration, flow LP assembly.
"""
from __future__ import annotations
import collections.abc
import numpy
import numpy.typing
import typing
__all__: list[str] = ['csr_row_sums', 'law_direct', 'normalize_rows', 'verify_direct', 'FlowModel', 'TooLargeError', 'VerifierBatch', 'dual_batch', 'engine_rejection_sample', 'engine_tree_sample', 'limits', 'tree_values', 'verifier_table']
class TooLargeError(ValueError):
    """
    The enumeration would exceed max_sets (a ValueError). The message gives the size needed.
    """
class FlowModel:
    """
    Draft sets of one (p, scheme) pair and their flow LP in CSC form.
    """
    def __init__(self, p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], q: typing.Annotated[numpy.typing.ArrayLike, numpy.float64] | None, n: typing.SupportsInt | typing.SupportsIndex, scheme: str, max_sets: typing.SupportsFloat | typing.SupportsIndex, tuples: typing.Annotated[numpy.typing.ArrayLike, numpy.int64] | None = None, probs: typing.Annotated[numpy.typing.ArrayLike, numpy.float64] | None = None) -> None:
        ...
    def certificate(self, v: typing.Annotated[numpy.typing.ArrayLike, numpy.float64]) -> tuple[float, numpy.typing.NDArray[numpy.int64]]:
        """
        Best threshold cut of the token duals v: (cut value, H as sorted token ids).
        """
    def cut_value(self, H: typing.Annotated[numpy.typing.ArrayLike, numpy.int64]) -> float:
        """
        p(H) + Pr[S not inside H]: the upper bound on alpha* given by the token set H.
        """
    def max_flow(self, hint: typing.Annotated[numpy.typing.ArrayLike, numpy.int64] | None = None) -> dict:
        """
        Exact max-flow on the draft-set network by push-relabel (no HiGHS): value, flows, cut, certificate.
        hint: optional guess of the certificate H (token ids) that steers the greedy start.
        """
    @property
    def a_index(self) -> numpy.typing.NDArray[numpy.int32]:
        ...
    @property
    def a_start(self) -> numpy.typing.NDArray[numpy.int32]:
        ...
    @property
    def num_col(self) -> int:
        ...
    @property
    def num_edges(self) -> int:
        ...
    @property
    def num_row(self) -> int:
        ...
    @property
    def num_sets(self) -> int:
        ...
    @property
    def rejected_mass(self) -> float:
        ...
    @property
    def row_tokens(self) -> numpy.typing.NDArray[numpy.int32]:
        ...
    @property
    def row_upper(self) -> numpy.typing.NDArray[numpy.float64]:
        ...
    @property
    def set_ptr(self) -> numpy.typing.NDArray[numpy.int64]:
        ...
    @property
    def set_tokens(self) -> numpy.typing.NDArray[numpy.int32]:
        ...
    @property
    def set_weights(self) -> numpy.typing.NDArray[numpy.float64]:
        ...
class VerifierBatch:
    """
    One verifier prepared for every row of (B, V) arrays p, q (validated, normalised).
    """
    def __init__(self, name: str, p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], q: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], n: typing.SupportsInt | typing.SupportsIndex, scheme: str, lp: typing.Any = None, threads: typing.SupportsInt | typing.SupportsIndex = 0, budget: typing.SupportsFloat | typing.SupportsIndex = 40000000.0) -> None:
        ...
    def route(self) -> dict:
        """
        What the without-replacement route did with each row (optimal / sweep with scheme='wor'): a dict
        of arrays work, out_of_budget, best_order, orders_run, alpha_star, alpha_plan and best_order_name.
        """
    def cost(self) -> numpy.typing.NDArray[numpy.float64]:
        """
        Estimated work of the exact route per row (rrs-wor; 0 otherwise).
        """
    def estimate(self, samples: typing.SupportsInt | typing.SupportsIndex, seed: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0, row_ids: typing.Any = None) -> tuple:
        """
        Acceptance estimated by simulation: (rate[B], standard error[B]).
        """
    def exact(self, budget: typing.SupportsFloat | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> numpy.typing.NDArray[numpy.float64]:
        """
        Exact acceptance of every row; raises TooLargeError when the exact route costs more than budget.
        """
    def law(self, tuples: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], row: typing.SupportsInt | typing.SupportsIndex = 0, naive_residual: bool = False) -> numpy.typing.NDArray[numpy.float64]:
        """
        Exact conditional output law Pr[y | tuple] for each tuple of shape (m, n): array (m, V).
        naive_residual=True: the law of the biased variant of simulate (for tests).
        """
    def rho(self) -> numpy.typing.NDArray[numpy.float64]:
        """
        K-SEQ's rho* per row (0 for other verifiers).
        """
    def simulate(self, samples: typing.SupportsInt | typing.SupportsIndex, seed: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0, naive_residual: bool = False, row_ids: typing.Any = None) -> tuple:
        """
        Draft and verify `samples` times per row: (tokens[B, s], accepted[B, s], drafts[B, s, n]).
        naive_residual=True resamples from p on rejection (a deliberately biased variant, for tests).
        """
    def verify(self, drafts: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], seed: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0, row_ids: typing.Any = None) -> tuple:
        """
        Verify given draft tuples, shape (m, n) with m = B (or any m when B = 1): (token[m], accepted[m]).
        """
    @property
    def B(self) -> int:
        ...
    @property
    def V(self) -> int:
        ...
    @property
    def n(self) -> int:
        ...
    @property
    def name(self) -> str:
        ...
def dual_batch(p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], q: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], n: typing.SupportsInt | typing.SupportsIndex, scheme: str, wor_method: str = 'auto', certificate: bool = False, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple:
    """
    alpha* of each row of (B, V) arrays by the sorted-prefix scan (iid, wor) or the greedy closed form.
    Inputs must already be validated and normalised. Returns (alpha[B], list of certificates or None).
    """
def engine_rejection_sample(draft_token_ids: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], cu_num_draft_tokens: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], draft_probs: typing.Annotated[numpy.typing.ArrayLike, numpy.float64] | None, target_probs: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], bonus_token_ids: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], is_greedy: typing.Annotated[numpy.typing.ArrayLike, numpy.uint8] | None, uniform_probs: typing.Annotated[numpy.typing.ArrayLike, numpy.float64] | None, recovery_noise: typing.Annotated[numpy.typing.ArrayLike, numpy.float64] | None, max_spec_len: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> numpy.typing.NDArray[numpy.int64]:
    """
    vLLM V1's rejection_sample on validated arrays: int64 (B, max_spec_len + 1), -1 placeholders.
    """
def engine_tree_sample(candidates: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], retrive_index: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], retrive_next_token: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], retrive_next_sibling: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], uniform_samples: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], uniform_samples_for_final_sampling: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], target_probs: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], draft_probs: typing.Annotated[numpy.typing.ArrayLike, numpy.float64] | None, num_speculative_tokens: typing.SupportsInt | typing.SupportsIndex, verifier: str, scheme: str, threshold_single: typing.SupportsFloat | typing.SupportsIndex, threshold_acc: typing.SupportsFloat | typing.SupportsIndex, work_budget: typing.SupportsFloat | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple:
    """
    SGLang's token-tree verification (verifier='sglang') or a registry verifier at every node, on
    validated arrays: (predicts (B*N,), accept_index (B, num_speculative_tokens), accept_token_num (B,)),
    int64 with -1 placeholders. num_speculative_tokens <= 0: the deepest tree's depth + 1.
    """
def limits() -> dict:
    """
    The package's limits (cpp/include/mdsd/limits.hpp): name -> (value, what it limits).
    """
def tree_values(names: collections.abc.Sequence[str], schemes: collections.abc.Sequence[str], trees: list, budget: typing.SupportsFloat | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0, naive_residual: bool = False) -> tuple:
    """
    Exact expected accepted length of each tree, (parent, token, p, q, draw_ptr, draw_child), and
    every node's reach probability: (accepted (T,), reach (sum of N,)). names and schemes run over
    the nodes of all trees in order; names[i] is the node's registry verifier, '' for p.
    """
def verifier_table() -> list:
    """
    The verifier table (cpp/include/mdsd/verifiers/registry.hpp): one dict per verifier.
    """
class _TestingModule:
    """
    Hooks into the C++ kernels for the tests (not a public API).
    """
    @staticmethod
    def race_weights(q: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], h: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], n: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.float64]: ...
    @staticmethod
    def wor_alpha_race(p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], q: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], n: typing.SupportsInt | typing.SupportsIndex, defer: bool) -> tuple:
        """
        (alpha*_wor, k_star, tokens batched) by the race integral, tiny tokens batched (defer) or one by one.
        """
    @staticmethod
    def wor_alpha_scan(p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], q: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], n: typing.SupportsInt | typing.SupportsIndex, scan: str, fine: typing.SupportsInt | typing.SupportsIndex = 4) -> tuple:
        """
        (alpha*_wor, k_star, prefixes integrated, fallback) by the race integral along the scan 'chord' (shipped),
        'every', 'fine' (every prefix, tokens one by one, `fine` times the nodes: the reference), 'ends' (a wrong
        scan) or 'fallback' (every split taken as non-convex).
        """
    @staticmethod
    def dual_batch_sorted(p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], q: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], n: typing.SupportsInt | typing.SupportsIndex, scheme: str, wor_method: str = 'auto', certificate: bool = False, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple: ...
    @staticmethod
    def iid_select_kept(p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], q: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], n: typing.SupportsInt | typing.SupportsIndex, force_exact: bool = False) -> tuple: ...
    @staticmethod
    def race_greedy(p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], q: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], n: typing.SupportsInt | typing.SupportsIndex, order: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], division: bool = True) -> tuple: ...
    @staticmethod
    def race_pass_keeps_e(keep: bool) -> None: ...
    @staticmethod
    def wor_events_keeps_e(keep: bool) -> None: ...
    @staticmethod
    def wor_outer_by_division(div: bool) -> None: ...
_testing: _TestingModule
ISA: str = 'baseline'
__version__: str = '0.1.0'

def dual_direct(p: typing.Any, q: typing.Any, n: typing.SupportsInt, scheme: str, wor_method: str = 'auto', certificate: bool = False, threads: typing.SupportsInt = 0, tol: float = 1e-4) -> tuple:
    """dual_batch on raw (B, V) rows (float32 or float64, one dtype), each validated and normalised in its own row's pass: (alpha[B], certificates or None, None), (None, None, (status, side, row, value)) for invalid input, (None, None, None) if the kernel refused a valid row."""
def verify_direct(name: str, p: typing.Any, q: typing.Any, drafts: typing.Any, seed: typing.SupportsInt, threads: typing.SupportsInt = 0, row_ids: typing.Any = None, tol: float = 1e-4, untouched: bool = False) -> tuple:
    """Verify tuple i against raw row i of (B, V) p, q without a plan ('sd', 'rrs', 'rrs-wor', 'kseq', 'optimal' with i.i.d. drafts), validating each row in its pass."""
def law_direct(name: str, p: typing.Any, q: typing.Any, tuples: typing.Any, tol: float = 1e-4, untouched: bool = False) -> typing.Any:
    """Exact output law of the direct route for each tuple (m, n) of one raw row (V,): (m, V). untouched=True (tests): 'optimal' with its windows cut from the untouched levels."""
def normalize_rows(x: typing.Any, tol: float, threads: typing.SupportsInt = 0) -> tuple:
    """Validate and normalise (B, V) rows in one pass each: (out, status, row, value)."""
def csr_row_sums(data: typing.Any, ptr: typing.Any) -> typing.Any:
    """Row sums of CSR rows (positive values), as normalize_rows sums (the rounded exact sum)."""
def wor_bucket_alpha(p: typing.Any, q: typing.Any, u: typing.Any, k: typing.SupportsInt, threads: typing.SupportsInt = 1) -> numpy.typing.NDArray[numpy.float64]:
    """Per row: 1 + min_H [p(H) - Q(H + bucket)], k draws without replacement, a Poisson bucket of mass u in every H."""
def wor_cut_descent(p: typing.Any, q: typing.Any, hidden: typing.Any, up: typing.Any, tp: typing.Any, uq: typing.Any, tq: typing.Any, k: typing.SupportsInt, p_top: typing.Any, n_tc: typing.Any, start: typing.Any, budget: typing.SupportsInt, pieces: typing.SupportsInt = 1048576, hold_a: bool = False, threads: typing.SupportsInt = 1) -> tuple:
    """Per row: the smallest cut bound of wor_cut_min's family over the sets a descent from start (h_B, h_C, |H ∩ A|) visits within budget: (high, work, whole, arg)."""
def wor_cut_min(p: typing.Any, q: typing.Any, hidden: typing.Any, up: typing.Any, tp: typing.Any, uq: typing.Any, tq: typing.Any, k: typing.SupportsInt, p_top: typing.Any, n_tc: typing.Any, pieces: typing.SupportsInt = 1048576, threads: typing.SupportsInt = 1) -> numpy.typing.NDArray[numpy.float64]:
    """Per row: min over every H of 1 + p_max(H) - Q_min(H), k draws without replacement (union layout), the forced q mass at the cap in at most `pieces` pieces."""
