"""The verifiers' facts, read from the C++ core's one verifier table (``_core.verifiers.table()``).

Which schemes a verifier serves, how many drafts it handles, which alpha* bounds it and how its
exact acceptance is computed are facts of the C++ core; this module reads them once. The registry
(:mod:`mdsd_fast.verifiers.registry`) builds its :class:`~mdsd_fast.Verifier` objects on them, and
the functions that run a verifier check their arguments against them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, TypeVar

from .. import _core
from ..inputs.rules import scheme_family

#: The registry's names, in the order it lists them.
NAMES = ("sd", "rrs", "rrs-wor", "kseq", "spechub", "greedy", "topk", "optimal-lp", "optimal", "sweep")

_V = TypeVar("_V", bound="VerifierFacts")


class VerifierFacts:
    """What a lossless verifier verifies: its draft schemes and numbers of drafts, as the C++ core's
    verifier table (``_core.verifiers.table()``) states them. :class:`~mdsd_fast.Verifier` (the
    registry's objects) adds the methods that run it; its docstring lists the attributes."""

    name: str = ""
    scheme: str = "iid"
    schemes: tuple[str, ...] = ("iid",)
    optimal_scheme: str = "iid"
    fixed_n: int | None = None
    n_min: int = 1
    n_max: int = 1
    report_schemes: tuple[str, ...] = ()
    exact_route: str = ""
    source: str = ""

    def resolve_scheme(self, scheme: str | None) -> str:
        """``scheme`` (or the default) once this verifier serves it; mixed schemes by their family."""
        if scheme is None:
            return self.scheme
        if not isinstance(scheme, str) or scheme_family(scheme) not in self.schemes:
            allowed = ", ".join(map(repr, self.schemes))
            raise ValueError(f"scheme: verifier {self.name!r} verifies {allowed} drafts, got {scheme!r}")
        return scheme

    def check_n(self, n: int) -> int:
        """``n`` (validated by ``check_n``) once this verifier handles that many drafts."""
        if not self.n_min <= n <= self.n_max:
            if self.fixed_n is not None:
                raise ValueError(f"n: verifier {self.name!r} handles n = {self.fixed_n} drafts only, got n = {n}")
            raise ValueError(f"n: verifier {self.name!r} handles {self.n_min} <= n <= {self.n_max} drafts, got n = {n}")
        return n

    def bound_scheme(self, scheme: str | None = None) -> str:
        """The scheme of ``optimal_acceptance`` whose alpha* bounds this verifier under ``scheme``."""
        sch = self.resolve_scheme(scheme)
        return self.optimal_scheme if sch == self.scheme else sch

    def __repr__(self) -> str:
        return f"<verifier {self.name!r}: {self.scheme} drafts; {self.source}>"


def _from_table(v: _V, row: Mapping[str, Any]) -> _V:
    """The facts of a verifier from its row of the C++ verifier table."""
    v.schemes = tuple(str(row["schemes"]).split(","))
    v.scheme = v.schemes[0]
    v.optimal_scheme = str(row["bound"])
    v.n_min, v.n_max = int(row["n_min"]), int(row["n_max"])
    v.fixed_n = v.n_min if v.n_min == v.n_max else None
    v.report_schemes = tuple(str(row["report"]).split(","))
    v.exact_route = str(row["exact"])
    return v


def _facts() -> Mapping[str, VerifierFacts]:
    table = {str(row["name"]): row for row in _core.verifiers.table()}
    if sorted(table) != sorted(NAMES):
        raise ImportError(f"mdsd_fast: the verifier table ({sorted(table)}) and the registry's names disagree")
    out = {}
    for name in NAMES:
        f = VerifierFacts()
        f.name = name
        out[name] = _from_table(f, table[name])
    return MappingProxyType(out)


#: Verifier name -> its facts (read-only).
FACTS: Mapping[str, VerifierFacts] = _facts()


def lookup(name: Any) -> VerifierFacts:
    """The facts of verifier ``name``; a ValueError listing the names otherwise."""
    if not isinstance(name, str) or name not in FACTS:
        raise ValueError(f"name: expected one of {', '.join(map(repr, FACTS))}, got {name!r}")
    return FACTS[name]
