# Typed stubs of mdsd_fast._core.inputs, generated with pybind11-stubgen from the built extension: regenerated, not
# edited. After changing cpp/bindings/, rebuild, then from the repository root:
#   PYTHONPATH=python MDSD_FAST_ISA=baseline pybind11-stubgen mdsd_fast._core -o /tmp/stubs
#   cp /tmp/stubs/mdsd_fast/_core/*.pyi python/mdsd_fast/_core/
#   sed -i -E 's/^(ISA|__version__): str = .*/\1: str/' python/mdsd_fast/_core/__init__.pyi
"""
The input rules: validation and the row sums.
"""
from __future__ import annotations
import numpy
import numpy.typing
import typing
__all__: list[str] = ['csr_row_sums', 'normalize_rows']
def csr_row_sums(data: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], ptr: typing.Annotated[numpy.typing.ArrayLike, numpy.int64]) -> numpy.typing.NDArray[numpy.float64]:
    """
    Row sums of CSR rows (positive values), as normalize_rows sums (the rounded exact sum).
    """
def normalize_rows(x: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], tol: typing.SupportsFloat | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple:
    """
    Validate and normalise (B, V) rows in one pass each: (out, status, row, value); status 0 = ok,
    1 = NaN or inf, 2 = a negative entry (value), 3 = the row sum (value) is not within tol of 1.
    """
