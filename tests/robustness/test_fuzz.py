"""The fuzz target of tests/_support/fuzz_entry_points.py, run inside the suite on a fixed, derandomized
budget of FUZZ_EXAMPLES examples (the sanitizer job also runs it for a bounded time with fresh
randomness)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings

from fuzz_entry_points import FUZZ_EXAMPLES, FUZZ_SETTINGS, calls, run_one

_seen = {"ok": 0, "refused": 0}


@settings(max_examples=FUZZ_EXAMPLES, **FUZZ_SETTINGS)
@given(calls())
def test_fuzz_entry_points(call: tuple[str, dict[str, Any]]) -> None:
    _seen[run_one(*call)] += 1


def test_fuzz_reaches_both_outcomes() -> None:
    """The generator is not degenerate: it produces both valid calls and refused ones."""
    if _seen["ok"] + _seen["refused"] == 0:  # run alone: exercise the target here
        test_fuzz_entry_points()
    assert _seen["ok"] >= 50 and _seen["refused"] >= 50, _seen
