"""Fuzz target over the Python entry points (hypothesis-driven).

Every call gets arbitrary arguments: arrays of any dtype (float16/32/64, int, bool, complex,
object), shape (0-d to 3-d, empty, mismatched batches), memory layout (strided, reversed) and
values (NaN, inf, negative, subnormal, huge, rows not summing to 1), numbers of drafts from -1 to
2^63, stray types, explicit tuple tables with out-of-range ids, odd keyword values. The contract:

* the call returns a well-formed result (finite probabilities in [0, 1] of the right shape), or
* it raises ValueError or TypeError (TooLargeError is a ValueError) whose message names an
  argument ("p:", "q:", "n:", ...);
* never any other exception, a crash (the process dies: run it under ASan, see .ci/sanitize) or
  a hang (sizes are kept small, so every call finishes in well under a second).

Two ways to run it:

* ``tests/robustness/test_fuzz.py`` runs ``FUZZ_EXAMPLES`` derandomized examples inside the test suite;
* ``python tests/_support/fuzz_entry_points.py --seconds 60`` fuzzes with fresh randomness for a bounded
  time (the sanitizer job runs it) and prints how many examples ran.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mdsd_fast as mf

FUZZ_EXAMPLES = 1000

#: Every refusal names what it refuses: an argument, or the verifier / solver that refuses.
_NAMED = re.compile(
    r"^(p|q|n|p, q|scheme|name|method|wor_method|solver|max_sets|time_limit|tuples|probs|tuples, probs|"
    r"drafts|samples|threads|exact|return_certificate|rng|simulate|acceptance|rrs-wor|optimal-lp|lp)\b"
    r"|^scheme='(iid|wor|greedy|independent|explicit)'"
)

_VALUES = st.one_of(
    st.floats(min_value=0.0, max_value=1.0),
    st.sampled_from(
        [0.0, 1.0, 0.5, 1e-300, 5e-324, 1e-12, 1 - 1e-12, -0.0, -1e-300, -0.5, 2.0, np.nan, np.inf, -np.inf, 1e308]
    ),
)
_DTYPES = st.sampled_from(
    [
        np.float64,
        np.float64,
        np.float64,
        np.float32,
        np.float16,
        np.int64,
        np.bool_,
        np.complex128,
        object,
        ">f8",
        np.longdouble,
    ]
)


@st.composite
def arrays(draw: st.DrawFn, V: int | None = None, valid: bool = False) -> Any:
    """Mostly valid-looking distributions, sometimes broken in one way or another."""
    kind = draw(st.integers(5, 9) if valid else st.integers(0, 9))
    if V is None:
        V = draw(st.integers(0, 6))
    if kind == 0:
        return draw(st.sampled_from([None, "abc", 3, [[0.5, 0.5], [1.0]], {}, np.float64(1.0), []]))
    B = draw(st.sampled_from([None, None, None, 1, 2] if valid else [None, None, 0, 1, 2, 3]))
    shape: tuple[int, ...] = (V,) if B is None else (B, V)
    if kind == 1:
        shape = draw(st.sampled_from([(1, 1, V), (), (V, 0)]))
    size = int(np.prod(shape)) if shape else 1
    vals = np.array(draw(st.lists(_VALUES, min_size=size, max_size=size)), dtype=np.float64).reshape(shape)
    if kind >= 4 and vals.size:  # make it a valid distribution (most of the time)
        vals = np.minimum(np.abs(np.nan_to_num(vals, nan=0.5, posinf=1.0, neginf=0.0)), 1.0)
        rows = vals.reshape(-1, shape[-1]) if shape and shape[-1] else vals.reshape(1, -1)
        for r in rows:
            if not r.sum() > 0:
                r[...] = 1.0
            r /= r.sum()
        if kind == 4:
            vals = vals * draw(st.sampled_from([1 + 5e-5, 1 - 5e-5, 1 + 1e-3]))
    dtype = draw(_DTYPES) if kind in (2, 3) else draw(st.sampled_from([np.float64, np.float64, np.float32]))
    with np.errstate(all="ignore"):
        arr = vals.astype(dtype) if dtype is not object else vals.astype(object)
    layout = draw(st.integers(0, 2 if valid else 3))
    if layout == 1 and arr.ndim >= 1:
        arr = np.ascontiguousarray(arr[..., ::-1])[..., ::-1]
    elif layout == 2 and arr.ndim == 2:
        arr = np.asfortranarray(arr)
    elif layout == 3 and draw(st.booleans()):
        arr = arr.tolist()
    return arr


_N = st.sampled_from([1, 1, 2, 2, 3, 4, 0, -1, 7, 10**6, 2**63, 2.0, True, None, "2", np.int32(2), np.uint8(3)])
_SCHEME = st.sampled_from(["iid", "wor", "greedy", "independent", "explicit", "bogus", None, 3])
_NAME = st.sampled_from(["sd", "rrs", "rrs-wor", "kseq", "spechub", "greedy", "optimal-lp", "nope", None])


def _check_result(x: Any) -> None:
    """Probabilities: finite, in [0, 1]."""
    a = np.asarray(x, dtype=np.float64)
    assert np.isfinite(a).all(), x
    assert ((a >= 0) & (a <= 1 + 1e-12)).all(), x


def _small_n(n: Any) -> bool:
    return isinstance(n, (int, np.integer)) and not isinstance(n, bool) and 0 < n <= 1000


@st.composite
def calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    entry = draw(st.sampled_from(["optimal_acceptance", "solve_lp", "explicit", "acceptance", "simulate", "verify"]))
    V = draw(st.integers(1, 6))
    p = draw(arrays(V))
    q = draw(arrays(draw(st.sampled_from([V, V, V, V + 1]))))
    n = draw(_N)
    kw: dict[str, Any] = {"p": p, "q": q, "n": n}
    if entry == "optimal_acceptance":
        kw["scheme"] = draw(_SCHEME)
        kw["method"] = draw(st.sampled_from(["auto", "dual", "lp", "x"]))
        kw["wor_method"] = draw(st.sampled_from(["auto", "exact", "integral", "x"]))
        kw["return_certificate"] = draw(st.sampled_from([False, True, 1, "yes"]))
        kw["threads"] = draw(st.sampled_from([None, 1, 2, 0, 2**40]))
    elif entry == "solve_lp":
        kw["scheme"] = draw(_SCHEME)
        kw["solver"] = draw(st.sampled_from(["highs", "flow", "x"]))
        kw["max_sets"] = draw(st.sampled_from([2_000_000, 10, 1, 0, 1.5]))
        kw["time_limit"] = draw(st.sampled_from([None, 10.0, 0.0, -1.0, float("nan"), "1"]))
    elif entry == "explicit":
        m = draw(st.integers(0, 5))
        w = draw(st.integers(0, 3))
        kw["tuples"] = draw(
            st.one_of(
                st.lists(st.lists(st.integers(-2, V + 1), min_size=w, max_size=w), min_size=m, max_size=m),
                st.sampled_from([None, [[0, 1], [1]], np.ones((2, 2), dtype=bool), np.zeros((1, 2)), [0, 1]]),
            )
        )
        kw["probs"] = draw(st.one_of(st.just(None), arrays(m)))
    elif entry in ("acceptance", "simulate", "verify"):
        kw["name"] = draw(_NAME)
        kw["scheme"] = draw(st.sampled_from([None, None, "iid", "wor", "greedy", "spechub"]))
        kw["rng"] = draw(st.sampled_from([0, 1, None, "x", -1, np.random.default_rng(3)]))
        kw["threads"] = draw(st.sampled_from([None, 1, 3, 0]))
        if entry == "acceptance":
            kw["exact"] = draw(st.sampled_from([True, True, False, "no"]))
            kw["samples"] = draw(st.sampled_from([100, 1, 0, -5, 2**70, 10.0]))
        elif entry == "simulate":
            samples = draw(st.sampled_from([0, 1, 50, -1, 2**70, 3.0]))
            if _small_n(n) and isinstance(samples, int) and samples > 0:
                samples = min(samples, max(1, 10**5 // int(n)))
            kw["samples"] = samples
        else:
            kw["drafts"] = draw(
                st.one_of(
                    st.lists(st.integers(-1, V), min_size=0, max_size=4),
                    st.lists(st.lists(st.integers(-1, V), min_size=2, max_size=2), min_size=0, max_size=3),
                    st.sampled_from([[0.0, 1.0], [True], None, np.array([2**63 + 1], dtype=np.uint64)]),
                )
            )
            del kw["n"]
    if draw(st.booleans()):  # half the calls: every argument but one value range is sane
        sane = {
            "n": draw(st.integers(1, 3)),
            "method": "auto",
            "wor_method": "auto",
            "return_certificate": False,
            "threads": None,
            "solver": draw(st.sampled_from(["highs", "flow"])),
            "max_sets": 2_000_000,
            "time_limit": None,
            "rng": 0,
            "exact": True,
            "samples": 50,
            "scheme": draw(st.sampled_from(["iid", "wor", "greedy"]))
            if entry in ("optimal_acceptance", "solve_lp")
            else None,
            "name": draw(st.sampled_from(["sd", "rrs", "rrs-wor", "kseq", "spechub", "greedy", "optimal-lp"])),
        }
        for k in list(kw):
            if k in sane and not (entry == "verify" and k == "n"):
                kw[k] = sane[k]
        if entry == "explicit":
            kw["n"] = 2
        if entry != "verify" and draw(st.booleans()):
            kw["p"], kw["q"] = draw(arrays(V, valid=True)), draw(arrays(V, valid=True))
            if entry == "solve_lp" and kw["scheme"] == "independent":
                kw["scheme"] = "iid"
    return entry, kw


def run_one(entry: str, kw: dict[str, Any]) -> str:
    """One call under the contract. Returns "ok" or "refused"."""
    try:
        if entry == "optimal_acceptance":
            out = mf.optimal_acceptance(**kw)
            a = out[0] if kw["return_certificate"] is True else out
            _check_result(a)
        elif entry in ("solve_lp", "explicit"):
            if entry == "explicit":
                kw = {**kw, "scheme": "explicit"}
            res = mf.solve_lp(**kw)
            _check_result(res.alpha)
            assert res.status == "Optimal"
            assert abs(res.alpha - res.cut_value) <= 1e-8
        elif entry == "acceptance":
            out = mf.acceptance(**kw)
            _check_result(out if kw["exact"] is True else out[0])
        elif entry == "simulate":
            sim = mf.simulate(**kw)
            assert sim.tokens.shape == sim.accepted.shape
            if sim.tokens.size:
                V = np.shape(np.asarray(kw["p"]))[-1]
                assert ((sim.tokens >= 0) & (sim.tokens < V)).all()
        elif entry == "verify":
            tok, acc = mf.verify(**kw)
            assert np.shape(tok) == np.shape(acc)
        return "ok"
    except (ValueError, TypeError) as e:
        msg = str(e)
        assert _NAMED.search(msg), f"{type(e).__name__} does not name its argument: {msg!r}"
        return "refused"


FUZZ_SETTINGS = dict(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="wall-clock budget")
    args = ap.parse_args()
    stats = {"ok": 0, "refused": 0}
    t_end = time.monotonic() + args.seconds

    # fresh randomness on every round; a failure raises with hypothesis's minimal failing call
    @settings(max_examples=500, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(calls())
    def fuzz(c: tuple[str, dict[str, Any]]) -> None:
        if time.monotonic() < t_end:
            stats[run_one(*c)] += 1

    while time.monotonic() < t_end:
        fuzz()
    total = stats["ok"] + stats["refused"]
    print(
        f"fuzz_entry_points: {total} examples in {args.seconds:g} s "
        f"({stats['ok']} returned, {stats['refused']} refused with a named error)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
