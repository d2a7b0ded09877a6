# Typed stubs of mdsd_fast._core.bound, generated with pybind11-stubgen from the built extension: regenerated, not
# edited. After changing cpp/bindings/, rebuild, then from the repository root:
#   PYTHONPATH=python MDSD_FAST_ISA=baseline pybind11-stubgen mdsd_fast._core -o /tmp/stubs
#   cp /tmp/stubs/mdsd_fast/_core/*.pyi python/mdsd_fast/_core/
#   sed -i -E 's/^(ISA|__version__): str = .*/\1: str/' python/mdsd_fast/_core/__init__.pyi
"""
alpha* by the dual kernels, the flow LP and the native max-flow.
"""
from __future__ import annotations
import numpy
import numpy.typing
import typing
__all__: list[str] = ['FlowModel', 'TooLargeError', 'dual_batch', 'dual_direct']
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
        Exact max-flow on the draft-set network by push-relabel (no HiGHS): value, flows, accepted mass per
        token, cut, certificate.
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
def dual_batch(p: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], q: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], n: typing.SupportsInt | typing.SupportsIndex, scheme: str, wor_method: str = 'auto', certificate: bool = False, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple:
    """
    alpha* of each row of (B, V) arrays by the sorted-prefix scan (iid, wor, mixed) or the closed forms (greedy, topk).
    Inputs must already be validated and normalised. Returns (alpha[B], list of certificates or None).
    """
def dual_direct(p: numpy.ndarray, q: numpy.ndarray, n: typing.SupportsInt | typing.SupportsIndex, scheme: str, wor_method: str = 'auto', certificate: bool = False, threads: typing.SupportsInt | typing.SupportsIndex = 0, tol: typing.SupportsFloat | typing.SupportsIndex = 0.0001) -> tuple:
    """
    dual_batch on raw (B, V) rows (float32 or float64, one dtype), each validated and normalised in its
    own row's pass: (alpha[B], certificates or None, None); (None, None, (status, side, row, value)) for
    invalid input (status as normalize_rows); (None, None, None) if the kernel refused a valid row.
    """
