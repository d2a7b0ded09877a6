"""Registry verifiers in the audit's contract (mostly to show that the audit passes them)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..verifiers.given_drafts import verify
from ..verifiers.registry import verifiers


class RegistryVerifier:
    """``verify(p, q, drafts, rng) -> int`` for a verifier of ``mdsd_fast.verifiers``.

    The call verifies one draft tuple through :func:`mdsd_fast.verify`, which prepares the
    verifier's plan for (p, q) each time; :meth:`verify_batch` prepares it once for a whole block
    of tuples, and the audit uses it when present (the batched extension of the contract).
    """

    def __init__(self, name: str, scheme: str | None = None, **options: Any) -> None:
        if not isinstance(name, str) or name not in verifiers:
            raise ValueError(f"name: expected one of {', '.join(map(repr, verifiers))}, got {name!r}")
        self.name = name
        self.scheme = verifiers[name].resolve_scheme(scheme)
        self.options = options  # passed to mdsd_fast.verify (work_budget=, threads=)

    def __call__(self, p: NDArray[np.float64], q: NDArray[np.float64], drafts: NDArray[np.int64], rng: Any) -> int:
        token, _ = verify(self.name, p, q, drafts, rng=rng, scheme=self.scheme, **self.options)  # type: ignore[arg-type]
        return int(token)

    def verify_batch(
        self, p: NDArray[np.float64], q: NDArray[np.float64], drafts: NDArray[np.int64], rng: Any
    ) -> NDArray[np.int64]:
        """One output token per row of ``drafts`` (B, n), all for the same (p, q)."""
        tokens, _ = verify(self.name, p, q, drafts, rng=rng, scheme=self.scheme, **self.options)  # type: ignore[arg-type]
        return np.asarray(tokens, dtype=np.int64)

    def __repr__(self) -> str:
        return f"registry_verifier({self.name!r}, scheme={self.scheme!r})"


def registry_verifier(name: str, scheme: str | None = None, **options: Any) -> RegistryVerifier:
    """The registry verifier ``name`` as an audit callable (``scheme=`` for "optimal-lp" /
    "optimal"; other keywords go to :func:`mdsd_fast.verify`)."""
    return RegistryVerifier(name, scheme, **options)
