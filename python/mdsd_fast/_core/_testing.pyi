# Typed stubs of mdsd_fast._core._testing, generated with pybind11-stubgen from the built extension: regenerated, not
# edited. After changing cpp/bindings/, rebuild, then from the repository root:
#   PYTHONPATH=python MDSD_FAST_ISA=baseline pybind11-stubgen mdsd_fast._core -o /tmp/stubs
#   cp /tmp/stubs/mdsd_fast/_core/*.pyi python/mdsd_fast/_core/
#   sed -i -E 's/^(ISA|__version__): str = .*/\1: str/' python/mdsd_fast/_core/__init__.pyi
"""
Hooks into the C++ kernels for the tests (not a public API).
"""
from __future__ import annotations
import numpy
import numpy.typing
import typing
__all__: list[str] = ['dual_batch_sorted', 'iid_select_kept', 'race_greedy', 'race_weights', 'wor_alpha_race', 'wor_alpha_scan']
def dual_batch_sorted(p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], q: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], n: typing.SupportsInt | typing.SupportsIndex, scheme: str, wor_method: str = 'auto', certificate: bool = False, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple:
    """
    dual_batch with the iid minimum found by a full ratio sort (the reference route of the selection).
    """
def iid_select_kept(p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], q: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], n: typing.SupportsInt | typing.SupportsIndex, force_exact: bool = False) -> tuple:
    """
    Per row of validated (B, V) arrays: (tokens below the window and in it, |supp q|, whether it fell back
    to the sorted route (some p / q overflowed), tokens in the window, whether ExactSum gave the bits,
    alpha*, the certificate). force_exact takes the ExactSum path; alpha* is meaningless on fallback rows.
    """
def race_greedy(p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], q: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], n: typing.SupportsInt | typing.SupportsIndex, order: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], division: bool = True) -> tuple:
    """
    The greedy pass of the full-vocabulary 'wor' plans over `order` (each token laid until it has won p):
    (w, h) per token. division=True: by division (as the plans run it), False: checkpointed (for tests).
    """
def race_weights(q: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], h: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], n: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.float64]:
    """
    E[1{y in S} prod_{S minus y} h] for every token y, S the n drafts without replacement from q, by the
    exponential-race quadrature of the full-vocabulary 'wor' plans (for tests against enumeration).
    """
def wor_alpha_race(p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], q: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], n: typing.SupportsInt | typing.SupportsIndex, defer: bool) -> tuple:
    """
    (alpha*_wor, k_star, tokens batched) by the race integral, tiny tokens batched (defer) or one by one.
    """
def wor_alpha_scan(p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], q: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], n: typing.SupportsInt | typing.SupportsIndex, scan: str, fine: typing.SupportsInt | typing.SupportsIndex = 4) -> tuple:
    """
    (alpha*_wor, k_star, prefixes integrated, fallback) by the race integral along the scan 'chord' (shipped),
    'every', 'fine' (every prefix, tokens one by one, `fine` times the nodes: the reference), 'ends' (a wrong
    scan), 'fallback' (every split taken as non-convex) or 'isolated' (chords unless another prefix may tie).
    """
