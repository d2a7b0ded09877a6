"""A statistical audit of anyone's multi-draft verifier for losslessness (docs/guide/audit.md).

``mdsd_fast.audit(verify, scheme="iid", n=2, ...)`` draws draft tuples from a named scheme (or
the user's own drafter) on a suite of (p, q) cases chosen to expose the known failure families,
calls ``verify(p, q, drafts, rng) -> token`` once per draft tuple, and tests per case

* the output law against p: Pearson's chi-square over bins chosen from p and the sample size,
  with the smallest TV it detects with probability 0.9 stated, and a TV interval;
* the acceptance against the bound of any lossless verifier (alpha* of the draft law, or for a
  custom drafter a certificate estimated on half the samples and tested on the other half).

p-values are Holm-corrected over all tests at a family-wise false-alarm rate (``alpha``,
default 1e-3 per audit). ``audit.registry_verifier(name)`` wraps a registry verifier, and
``audit.suite()`` returns the built-in cases.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterable
from typing import Any

from ._registry import RegistryVerifier, registry_verifier
from ._result import AuditResult, CaseResult
from ._run import DEFAULT_ALPHA, DEFAULT_SAMPLES, AuditError, Draft, Verify, run_audit
from ._suite import SCHEMES, AuditCase, builtin_cases, real_cases

__all__ = [
    "audit",
    "Audit",
    "AuditResult",
    "CaseResult",
    "AuditCase",
    "AuditError",
    "RegistryVerifier",
    "registry_verifier",
    "suite",
    "SCHEMES",
    "DEFAULT_SAMPLES",
    "DEFAULT_ALPHA",
]


def suite(*, large: bool = True, real: int = 0) -> list[AuditCase]:
    """The built-in cases (``large``: with the V = 4,096 case; ``real``: plus that many rows of
    the shipped SmolLM2 dataset, V = 49,152, the ones with the most draft mass outside its top 50)."""
    return builtin_cases(large=large) + (real_cases(real) if real else [])


class Audit:
    """The callable ``mdsd_fast.audit``; ``audit.registry_verifier`` and ``audit.suite`` ride along."""

    registry_verifier = staticmethod(registry_verifier)
    suite = staticmethod(suite)

    def __call__(
        self,
        verify: Verify,
        scheme: str = "iid",
        n: int = 2,
        *,
        draft: Draft | None = None,
        cases: Iterable[Any] | None = None,
        samples: int | None = None,
        rng: Any = None,
        alpha: float = DEFAULT_ALPHA,
        batched: bool = False,
        real: int = 0,
    ) -> AuditResult:
        """Audit a verifier for losslessness: is its output law exactly p on every case?

        Parameters
        ----------
        verify : ``verify(p, q, drafts, rng) -> int``, one position: p, q read-only float64 arrays
            of shape (V,), drafts a read-only int64 array of shape (n,), rng a numpy Generator
            (the same one for every call of a case). It returns the output token id. If it has an
            attribute ``verify_batch(p, q, drafts, rng) -> tokens`` (drafts of shape (B, n),
            tokens (B,)), that is called once per case instead (or pass ``batched=True`` when
            ``verify`` itself is the batched form).
        scheme : how drafts are drawn: "iid", "wor", "greedy", "topk", "spechub" (keys of
            ``mdsd_fast.audit.SCHEMES``) or a mixed "top<m>+iid" / "top<m>+wor"; ignored when
            ``draft`` is given.
        n : drafts per position.
        draft : a custom drafter ``draft(q, n, rng) -> n token ids`` instead of a named scheme. Its
            law is unknown, so the acceptance is tested against the split-half certificate bound.
        cases : (p, q) pairs or :class:`AuditCase` objects instead of the built-in suite.
        samples : draft tuples per case (default ``DEFAULT_SAMPLES`` = 20,000).
        rng : seed (anything ``numpy.random.default_rng`` accepts); ``result.seed`` repeats a run.
        alpha : family-wise false-alarm rate of the whole audit (default 1e-3).
        batched : ``verify`` is the batched form ``verify(p, q, drafts[B, n], rng) -> tokens[B]``.
        real : add this many rows of the shipped SmolLM2 dataset to the built-in suite.

        Returns
        -------
        AuditResult: ``lossless`` (False when any case fails), ``cases`` (a :class:`CaseResult`
        per case: verdict, pvalue, tv, tv_ci, tv_detectable, acceptance, acceptance_se,
        alpha_star, ...), ``verdict()``, ``table()``.

        Raises
        ------
        AuditError (a ValueError) when ``verify`` or ``draft`` raises or returns anything but
        token ids in [0, V), naming the case and the call; ValueError / TypeError for bad options.
        """
        return run_audit(
            verify,
            scheme,
            n,
            draft=draft,
            cases=cases,
            samples=samples,
            rng=rng,
            alpha=alpha,
            batched=batched,
            real=real,
        )

    def __repr__(self) -> str:
        return "<mdsd_fast.audit: audit(verify, scheme='iid', n=2, *, draft=None, cases=None, samples=None, rng=None)>"


#: ``mdsd_fast.audit(verify, scheme, n, ...)``: see :meth:`Audit.__call__`.
audit = Audit()


class _CallableModule(types.ModuleType):
    """The face loads the audit on first use, so an ``import mdsd_fast.audit`` that comes first
    binds ``mdsd_fast.audit`` to this module rather than to :data:`audit`: calling the module then
    calls the audit (``registry_verifier`` and ``suite`` are module attributes too)."""

    def __call__(self, *args: Any, **kwargs: Any) -> AuditResult:
        return audit(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
