"""Which build of the C++ core this process runs: the AVX2 one where the CPU has it, else the baseline.

The wheels hold two builds of the same core: ``mdsd_fast._core`` (the baseline: SSE2 on x86-64)
and ``mdsd_fast._core_avx2`` (the same sources compiled with ``-mavx2``: the kernels' lanes carry
four doubles instead of two). Both give the same bits on every input; the AVX2 build is faster. A
source install compiles the core once, for the machine that builds it (CMake's ``MDSD_ISA=auto``:
the AVX2 build where that machine runs AVX2, else the baseline); ``MDSD_ISA=both`` builds both. Only one may be imported per process (both register
the same C++ types with pybind11), so :func:`load_core` decides before either is imported, asking the
tiny ``mdsd_fast._cpu`` module what the CPU and OS can run, and installs the chosen build as
``mdsd_fast._core`` for every later import.

The environment variable ``MDSD_FAST_ISA`` overrides the choice: ``auto`` (the default), ``baseline``
or ``avx2`` (an error if this CPU or this installation cannot run it).
"""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType
from typing import Any

ENV = "MDSD_FAST_ISA"
CHOICES = ("auto", "baseline", "avx2")


def builds() -> tuple[str, ...]:
    """The builds of the core this installation holds: "baseline" and/or "avx2"."""
    import importlib.machinery
    from pathlib import Path

    here = Path(__file__).resolve().parent
    have = []
    for isa, mod in (("baseline", "_core"), ("avx2", "_core_avx2")):
        if any((here / (mod + sfx)).is_file() for sfx in importlib.machinery.EXTENSION_SUFFIXES):
            have.append(isa)
    return tuple(have)


def cpu_has_avx2() -> bool:
    """Whether this CPU and OS run AVX2 code (False where this installation has no AVX2 build)."""
    try:
        cpu: Any = importlib.import_module("mdsd_fast._cpu")
    except ImportError:
        return False
    return bool(cpu.has_avx2())


def load_core() -> ModuleType:
    """Imports the build of the core that ``MDSD_FAST_ISA`` and the CPU call for, as ``mdsd_fast._core``."""
    want = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if want not in CHOICES:
        raise ImportError(f"{ENV}={want!r}: expected one of {', '.join(CHOICES)}")
    if want != "baseline":
        if cpu_has_avx2():
            try:
                mod = importlib.import_module("mdsd_fast._core_avx2")
            except ImportError as e:
                if want == "avx2":
                    raise ImportError(f"{ENV}=avx2, but the AVX2 build could not be imported: {e}") from e
            else:
                sys.modules["mdsd_fast._core"] = mod
                setattr(sys.modules["mdsd_fast"], "_core", mod)  # noqa: B010 (what `import` would set)
                return mod
        elif want == "avx2":
            raise ImportError(
                f"{ENV}=avx2, but this CPU (or OS) does not run AVX2 code, or this installation has no AVX2 build"
            )
    mod = importlib.import_module("mdsd_fast._core")
    if getattr(mod, "__file__", None) is None:  # the stubs' folder mdsd_fast/_core/ alone: no compiled core
        if want == "baseline" and "avx2" in builds():
            raise ImportError(
                f"{ENV}=baseline, but this installation has the AVX2 build alone (a source install compiles the "
                "one its machine runs): reinstall with pip install . -C cmake.define.MDSD_ISA=both"
            )
        if "avx2" in builds():
            raise ImportError(
                "mdsd_fast was compiled for AVX2 alone (a source install builds the core once, for the machine "
                "that compiles it), and this CPU or OS does not run AVX2 code: reinstall mdsd_fast on this "
                "machine, or build both with pip install . -C cmake.define.MDSD_ISA=both"
            )
        raise ImportError("mdsd_fast._core, the compiled core, is missing from this installation: reinstall mdsd_fast")
    return mod
