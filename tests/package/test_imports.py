"""What ``import mdsd_fast`` loads: the core and the alpha* / verifier API, not the modules that load on
first use (PEP 562), and every name of the face still there, the same object once loaded.

Each check runs in a fresh interpreter (this process has imported everything long ago) that imports
the mdsd_fast under test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast.inputs.kinds import is_logits, is_sparse

#: Where the imported mdsd_fast lives (an install's site-packages, or an in-place build's python/).
PY = Path(mf.__file__).resolve().parents[1]

#: Loaded on first use, never by ``import mdsd_fast`` (nor by its dense alpha* / verifier calls).
DEFERRED = (
    "mdsd_fast.bound.lp",
    "mdsd_fast.inputs.logits",
    "mdsd_fast.inputs.sparse",
    "mdsd_fast.constraints",
    "mdsd_fast.sparse",
    "mdsd_fast.trees",
    "mdsd_fast.audit",
    "mdsd_fast.engines",
    "mdsd_fast.lossy",
    "mdsd_fast.logs",
    "mdsd_fast.report",
    "mdsd_fast.served",
    "mdsd_fast.intervals",
    "mdsd_fast.data",
    "mdsd_fast.cli",
    "highspy",
    "scipy",
    "torch",
)


def child(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON object, returned here."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PY), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_loads_the_api_and_defers_the_rest() -> None:
    got = child(
        "import json, sys, numpy\n"
        "before = set(sys.modules)\n"
        "import mdsd_fast as mf\n"
        "new = sorted(set(sys.modules) - before)\n"
        "g = vars(mf)\n"
        "eager = [n for n in ('optimal_acceptance', 'acceptance', 'simulate', 'verify', 'route_report',\n"
        "         'verifiers', 'Verifier', 'Simulation', 'TooLargeError', 'limits', 'ISA') if n in g]\n"
        "import numpy as np\n"
        "p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])\n"
        "mf.optimal_acceptance(p, q, 2, 'wor'); mf.acceptance('rrs', p, q, 2)\n"
        "mf.verify('rrs', p, q, [0, 2], rng=1); mf.simulate('kseq', p, q, 2, 8, rng=1)\n"
        "after_calls = sorted(m for m in sys.modules if m not in before)\n"
        "print(json.dumps({'new': new, 'eager': eager, 'after_calls': after_calls}))"
    )
    assert "mdsd_fast._core" in got["new"] and "mdsd_fast.verifiers.run" in got["new"]
    assert len(got["eager"]) == 11, got["eager"]  # in the module's namespace: no hook on first use
    for mod in DEFERRED:
        assert mod not in got["new"], mod
        assert mod not in got["after_calls"], mod  # dense calls do not load them either
    # numpy may load dataclasses itself on some versions; only what mdsd_fast adds on top counts.
    assert "dataclasses" not in got["new"]


def test_every_name_of_the_face_resolves_in_a_fresh_interpreter() -> None:
    got = child(
        "import json, mdsd_fast as mf\n"
        "import mdsd_fast.bound as b, mdsd_fast.inputs as i\n"
        "names = {n: type(getattr(mf, n)).__name__ for n in mf.__all__}\n"
        "subs = {m.__name__: [n for n in m.__all__ if getattr(m, n) is None] for m in (b, i)}\n"
        "missing = [n for n in mf.__all__ if n not in dir(mf)]\n"
        "mods = [mf.bound.lp.__name__, mf.inputs.logits.__name__, mf.inputs.sparse.__name__]\n"
        "print(json.dumps({'names': names, 'subs': subs, 'missing': missing, 'mods': mods}))"
    )
    assert sorted(got["names"]) == sorted(mf.__all__)
    assert got["subs"] == {"mdsd_fast.bound": [], "mdsd_fast.inputs": []}
    assert got["missing"] == []
    # the deferred submodules are attributes of their packages, as when they loaded eagerly
    assert got["mods"] == ["mdsd_fast.bound.lp", "mdsd_fast.inputs.logits", "mdsd_fast.inputs.sparse"]


def test_lazy_names_are_the_defining_modules_objects() -> None:
    from mdsd_fast import bound, inputs
    from mdsd_fast.bound import lp
    from mdsd_fast.inputs import logits, sparse

    for name in ("solve_lp", "LPResult", "SolverError", "DEFAULT_MAX_SETS", "TooLargeError"):
        assert getattr(mf, name) is getattr(lp, name) is getattr(bound, name)
    assert mf.Logits is inputs.Logits is logits.Logits and inputs.pair is logits.pair
    assert mf.TopK is inputs.TopK is sparse.TopK and sparse.is_sparse is is_sparse
    assert mf.TooLargeError is mf._core.bound.TooLargeError and issubclass(mf.TooLargeError, ValueError)
    for mod in (mf, bound, inputs):
        with pytest.raises(AttributeError, match=f"module '{mod.__name__}' has no attribute 'nothing'"):
            mod.nothing  # noqa: B018


def test_too_large_error_is_documented_before_the_lp_loads() -> None:
    got = child(
        "import json, sys, mdsd_fast as mf\n"
        "print(json.dumps({'doc': mf.TooLargeError.__doc__, 'lp': 'mdsd_fast.bound.lp' in sys.modules}))"
    )
    assert got == {"doc": mf.TooLargeError.__doc__, "lp": False}
    assert "max_sets" in got["doc"]


def test_kinds_of_input_without_importing_them() -> None:
    z = np.array([0.1, 0.2, 0.7])
    lg, tk = mf.Logits(np.log(z)), mf.TopK([0, 2], [0.4, 0.6], 3)

    class MyTopK(mf.TopK):  # a subclass is one too
        pass

    assert is_logits(lg) and not is_sparse(lg)
    assert is_sparse(tk) and is_sparse(MyTopK([0], [1.0], 3)) and not is_logits(tk)
    for dense in (z, z.tolist(), np.float64(1.0), None, "TopK"):  # negative controls
        assert not is_sparse(dense) and not is_logits(dense)
    sp = pytest.importorskip("scipy.sparse")
    assert is_sparse(sp.csr_matrix(z[None])) and not is_sparse(sp)
    # A Logits and a TopK still reach the kernels as the distributions they stand for.
    q = np.array([0.3, 0.3, 0.4])
    assert mf.optimal_acceptance(lg, q, 2) == mf.optimal_acceptance(lg.probabilities(), q, 2)
    assert mf.optimal_acceptance(tk, q, 2) == mf.optimal_acceptance(np.array([0.4, 0.0, 0.6]), q, 2)
