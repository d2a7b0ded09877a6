# Typed stubs of mdsd_fast._core, generated with pybind11-stubgen from the built extension: regenerated, not
# edited. After changing cpp/bindings/, rebuild, then from the repository root:
#   PYTHONPATH=python MDSD_FAST_ISA=baseline pybind11-stubgen mdsd_fast._core -o /tmp/stubs
#   cp /tmp/stubs/mdsd_fast/_core/*.pyi python/mdsd_fast/_core/
#   sed -i -E 's/^(ISA|__version__): str = .*/\1: str/' python/mdsd_fast/_core/__init__.pyi
"""
mdsd_fast C++ core: one submodule per concept (inputs, bound, verifiers, engines, intervals, trees).
"""
from __future__ import annotations
from . import inputs
from . import bound
from . import verifiers
from . import engines
from . import intervals
from . import trees
from . import _testing
__all__: list[str] = ['ISA', 'bound', 'engines', 'inputs', 'intervals', 'limits', 'trees', 'verifiers']
def limits() -> dict:
    """
    The package's limits (cpp/include/mdsd/core/limits.hpp): name -> (value, what it limits).
    """
ISA: str
__version__: str
