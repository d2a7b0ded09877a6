"""Which registry verifier serves a node: one name for the whole tree, or one per scheme."""

from __future__ import annotations

from collections.abc import Mapping

from ..inputs.rules import scheme_family
from ..verifiers.registry import verifiers

__all__ = ["VerifierSpec", "DETERMINISTIC", "node_verifier"]

#: A registry name used at every node, or a mapping scheme -> name (keys: a node's scheme such as
#: "top2+iid", or its family "top<m>+iid"), for trees whose nodes mix schemes.
VerifierSpec = str | Mapping[str, str]

#: Nodes verified by the deterministic-set rule whatever the verifier: their output law is p itself.
DETERMINISTIC = "static"


def node_verifier(verifier: VerifierSpec, scheme: str, n: int, node: int) -> str:
    """The registry name that verifies node ``node``'s tuple of ``n`` drafts under ``scheme``."""
    if isinstance(verifier, str):
        name = verifier
    elif isinstance(verifier, Mapping):
        got = verifier.get(scheme, verifier.get(scheme_family(scheme)))
        if got is None:
            raise ValueError(f"verifier: node {node} has scheme {scheme!r}, which the mapping does not name")
        name = got
    else:
        raise TypeError(
            f"verifier: expected a registry name or a mapping scheme -> name, got {type(verifier).__name__}"
        )
    if name not in verifiers:
        raise ValueError(f"verifier: expected one of {', '.join(map(repr, verifiers))}, got {name!r}")
    v = verifiers[name]
    if scheme_family(scheme) not in v.schemes:
        raise ValueError(
            f"verifier: {name!r} verifies {', '.join(map(repr, v.schemes))} drafts; node {node} has {scheme!r}"
        )
    if not v.n_min <= n <= v.n_max:
        raise ValueError(f"verifier: {name!r} handles {v.n_min} <= n <= {v.n_max} drafts; node {node} has n = {n}")
    return name
