# Typed stubs of mdsd_fast._core.intervals, generated with pybind11-stubgen from the built extension: regenerated, not
# edited. After changing cpp/bindings/, rebuild, then from the repository root:
#   PYTHONPATH=python MDSD_FAST_ISA=baseline pybind11-stubgen mdsd_fast._core -o /tmp/stubs
#   cp /tmp/stubs/mdsd_fast/_core/*.pyi python/mdsd_fast/_core/
#   sed -i -E 's/^(ISA|__version__): str = .*/\1: str/' python/mdsd_fast/_core/__init__.pyi
"""
acceptance_bounds' without-replacement ends on truncated logs.
"""
from __future__ import annotations
import numpy
import numpy.typing
import typing
__all__: list[str] = ['wor_cut_descent', 'wor_cut_min', 'wor_low_end']
def wor_cut_descent(p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], q: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], hidden: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], up: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], tp: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], uq: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], tq: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], k: typing.SupportsInt | typing.SupportsIndex, p_top: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], n_tc: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], start: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], budget: typing.SupportsInt | typing.SupportsIndex, pieces: typing.SupportsInt | typing.SupportsIndex = 1048576, hold_a: bool = False, threads: typing.SupportsInt | typing.SupportsIndex = 1) -> tuple:
    """
    Per row: the smallest cut bound of wor_cut_min over the sets of its family that a descent from
    start = (h_B, h_C, A prefix), (B, 3), visits within budget (race steps plus sets tried) by boxes
    of the family (docs/design/intervals.md §3.2): (high, work, whole, arg), whole = a box covered the family
    (high is then wor_cut_min's), arg = the best set's (h_B, h_C, A prefix, h_D), (B, 4). hold_a keeps the A prefix at the start's (a negative control).
    """
def wor_cut_min(p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], q: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], hidden: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], up: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], tp: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], uq: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], tq: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], k: typing.SupportsInt | typing.SupportsIndex, p_top: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], n_tc: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], pieces: typing.SupportsInt | typing.SupportsIndex = 1048576, threads: typing.SupportsInt | typing.SupportsIndex = 1) -> numpy.typing.NDArray[numpy.float64]:
    """
    Per row: min over every H of 1 + p_max(H) - Q_min(H) for k draws without replacement: the high
    end of acceptance_bounds for "wor" (docs/design/intervals.md §3.2). p, q: (B, L) on the union layout;
    hidden: tokens logged in neither; up, tp, uq, tq: unseen masses and caps, (B,); for top<m>+wor
    T's columns zeroed, p_top = p(T) and n_tc = its p-unseen tokens (zeros for wor), (B,); pieces:
    the q mass forced into H at the cap t_q in at most this many pieces, equal lumps beyond (§3.5;
    1: one lump, §3; the default 2^20 never merges below 2^20 unseen tokens).
    """
def wor_low_end(p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], q: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], u: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], k: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 1) -> numpy.typing.NDArray[numpy.float64]:
    """
    Per row: 1 + min_H [p(H) - Q(H + bucket)] for k draws without replacement from the logged q
    plus a Poisson bucket of mass u (> 0) in every H: the low end of acceptance_bounds for "wor"
    (docs/guide/intervals.md §2). p, q: (B, L) logged values, u: (B,).
    """
