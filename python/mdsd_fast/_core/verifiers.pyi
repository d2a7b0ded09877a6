# Typed stubs of mdsd_fast._core.verifiers, generated with pybind11-stubgen from the built extension: regenerated, not
# edited. After changing cpp/bindings/, rebuild, then from the repository root:
#   PYTHONPATH=python MDSD_FAST_ISA=baseline pybind11-stubgen mdsd_fast._core -o /tmp/stubs
#   cp /tmp/stubs/mdsd_fast/_core/*.pyi python/mdsd_fast/_core/
#   sed -i -E 's/^(ISA|__version__): str = .*/\1: str/' python/mdsd_fast/_core/__init__.pyi
"""
The verifier registry, VerifierBatch and the plan-free route (one tuple per row, no plan).
"""
from __future__ import annotations
import numpy
import numpy.typing
import typing
__all__: list[str] = ['VerifierBatch', 'exact_closed', 'exact_lifted', 'law_direct', 'table', 'verify_direct']
class VerifierBatch:
    """
    One verifier prepared for every row of (B, V) arrays p, q (validated, normalised). wor_options (the
    without-replacement route): exact_head, event_head, last_resort_head, chain_depth (ints >= 1), and the
    tests' reference routes h_star_every_prefix (H* from the scan of every prefix) and outer_by_division
    (False: the outer system's passes checkpointed).
    """
    def __init__(self, name: str, p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], q: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], n: typing.SupportsInt | typing.SupportsIndex, scheme: str, lp: typing.Any = None, threads: typing.SupportsInt | typing.SupportsIndex = 0, budget: typing.SupportsFloat | typing.SupportsIndex = 40000000.0, wor_options: dict = {}) -> None:
        ...
    def cost(self) -> numpy.typing.NDArray[numpy.float64]:
        """
        Estimated work of the exact route per row (rrs-wor; 0 otherwise).
        """
    def estimate(self, samples: typing.SupportsInt | typing.SupportsIndex, seed: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0, row_ids: typing.Any = None) -> tuple:
        """
        Acceptance estimated by simulation: (rate[B], standard error[B]). row_ids: stable stream keys.
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
    def route(self) -> dict:
        """
        What the without-replacement route did with each row (optimal / sweep with scheme='wor'): a dict
        of arrays work, out_of_budget, best_order, orders_run, alpha_star, alpha_plan and best_order_name.
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
def law_direct(name: str, p: numpy.ndarray, q: numpy.ndarray, tuples: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], tol: typing.SupportsFloat | typing.SupportsIndex = 0.0001, untouched: bool = False) -> numpy.typing.NDArray[numpy.float64]:
    """
    Exact output law of the direct route for each tuple (m, n) of one raw row (V,): (m, V).
    untouched=True (tests): 'optimal' with its windows cut from the untouched levels (wrong on purpose).
    """
def table() -> list:
    """
    The verifier table (cpp/include/mdsd/verifiers/registry.hpp): one dict per verifier.
    """
def exact_closed(name: str, p: numpy.ndarray, q: numpy.ndarray, n: typing.SupportsInt | typing.SupportsIndex, tol: typing.SupportsFloat | typing.SupportsIndex = 0.0001, threads: typing.SupportsInt | typing.SupportsIndex = 0, prepared: bool = False, ids: typing.Any = None, vocab: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple:
    """
    Exact acceptance of 'sd', 'rrs', 'kseq', 'greedy', 'topk' or 'spechub' for every row of (B, V) p, q by
    its closed form, without a plan: (acc[B], None), (None, (0, status, side, row, value)) for an invalid
    row, or (None, (1, row, support, 0, 0)) when q has too few tokens with q > 0. prepared=True: p, q are
    as_pair's validated float64 rows, read in place.
    """
def exact_lifted(name: str, p: numpy.ndarray, q: numpy.ndarray, n: typing.SupportsInt | typing.SupportsIndex, scheme: str, tol: typing.SupportsFloat | typing.SupportsIndex = 0.0001, threads: typing.SupportsInt | typing.SupportsIndex = 0, prepared: bool = False, ids: typing.Any = None, vocab: typing.SupportsInt | typing.SupportsIndex = 0, budget: typing.SupportsFloat | typing.SupportsIndex = 200000000.0) -> tuple:
    """
    Exact acceptance without a plan of 'rrs-wor' ('wor' or 'top<m>+wor') and of 'rrs' and 'kseq' under
    'top<m>+iid', for every row of (B, V) p, q; arguments and results as exact_closed. An rrs-wor row
    whose recursion costs more than budget raises TooLargeError, as VerifierBatch.exact does.
    """
def verify_direct(name: str, p: numpy.ndarray, q: numpy.ndarray, drafts: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], seed: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0, row_ids: typing.Any = None, tol: typing.SupportsFloat | typing.SupportsIndex = 0.0001, untouched: bool = False) -> tuple:
    """
    Verify tuple i against raw row i of (B, V) p, q without a plan ('sd', 'rrs', 'rrs-wor', 'kseq',
    'optimal' with i.i.d. drafts),
    validating and normalising each row in its own pass: (token[B], accepted[B], None), or
    (None, None, (status, side, row, value)) for invalid input (status as normalize_rows).
    """
