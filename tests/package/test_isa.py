"""The two builds of the C++ core (mdsd_fast._isa): which one loads, the MDSD_FAST_ISA override and
its errors, and the same bits from both on every kernel family (tests/_support/isa_battery.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast import _isa

HERE = Path(__file__).resolve().parent


def has_avx2_build() -> bool:
    try:
        import mdsd_fast._core_avx2  # noqa: F401  (imports nothing new if it is the loaded build)
    except ImportError:
        return False
    return True


def run(code: str, isa: str | None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop(_isa.ENV, None)
    if isa is not None:
        env[_isa.ENV] = isa
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_loaded_build_is_the_best_this_cpu_runs() -> None:
    want = os.environ.get(_isa.ENV, "auto")
    expect = "avx2" if want != "baseline" and _isa.cpu_has_avx2() and has_avx2_build() else "baseline"
    assert mf.ISA == expect
    assert mf._core.ISA == expect
    assert sys.modules["mdsd_fast._core"] is mf._core  # every `from . import _core` gets this build


def test_builds_of_this_installation() -> None:
    have = _isa.builds()
    assert have and set(have) <= {"baseline", "avx2"}
    assert mf.ISA in have


@pytest.mark.parametrize("isa", ["baseline", "auto"])
def test_override(isa: str) -> None:
    r = run("import mdsd_fast as mf, mdsd_fast._core as c; print(mf.ISA, c.ISA)", isa)
    if isa == "baseline" and "baseline" not in _isa.builds():  # a source install built for AVX2 alone
        assert r.returncode != 0 and "has the AVX2 build alone" in r.stderr, r.stderr
        return
    assert r.returncode == 0, r.stderr
    got = r.stdout.split()
    assert got[0] == got[1]
    if isa == "baseline":
        assert got[0] == "baseline"


def test_bad_override_is_one_clear_error() -> None:
    r = run("import mdsd_fast", "sse9")
    assert r.returncode != 0
    assert "MDSD_FAST_ISA='sse9': expected one of auto, baseline, avx2" in r.stderr


def test_forced_avx2_where_unavailable_says_so() -> None:
    if _isa.cpu_has_avx2() and has_avx2_build():
        r = run("import mdsd_fast as mf; print(mf.ISA)", "avx2")
        assert r.returncode == 0 and r.stdout.strip() == "avx2", r.stderr
    else:
        r = run("import mdsd_fast", "avx2")
        assert r.returncode != 0 and "MDSD_FAST_ISA=avx2" in r.stderr


@pytest.mark.skipif(
    not (_isa.cpu_has_avx2() and set(_isa.builds()) == {"baseline", "avx2"}),
    reason="one build of the core here (a source install; the wheels carry both), or this CPU lacks AVX2",
)
def test_both_builds_give_the_same_bits(tmp_path: Path) -> None:
    files = {}
    for isa in ("baseline", "avx2"):
        out = tmp_path / f"{isa}.npz"
        env = dict(os.environ, **{_isa.ENV: isa})
        r = subprocess.run(
            [sys.executable, str(HERE.parent / "_support" / "isa_battery.py"), str(out)],
            env=env,
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr[-3000:]
        files[isa] = np.load(out)
    a, b = files["baseline"], files["avx2"]
    # the control: the two runs did load different builds
    assert str(a["isa"]) == "baseline" and str(b["isa"]) == "avx2"
    assert str(a["core"]) == "mdsd_fast._core" and str(b["core"]) == "mdsd_fast._core_avx2"
    keys = [k for k in a.files if k not in ("isa", "core")]
    assert sorted(keys) == sorted(k for k in b.files if k not in ("isa", "core"))
    assert len(keys) > 800

    def bits(x: np.ndarray) -> np.ndarray:
        return x.view(np.uint64) if x.dtype == np.float64 else x

    differ = [k for k in keys if a[k].shape != b[k].shape or not np.array_equal(bits(a[k]), bits(b[k]))]
    assert not differ, f"{len(differ)} of {len(keys)} results differ between the builds, e.g. {differ[:5]}"
