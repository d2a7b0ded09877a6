"""What an audit returns: one record per case and the verdict."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CaseResult:
    """The audit of one (p, q) case.

    The output-law test is Pearson's chi-square of the output tokens against p over bins chosen
    from p and the sample size (``bins`` of them, ``df`` = bins - 1); any output on a token with
    p = 0 is a proof of a bug on its own (``impossible``). The acceptance test checks that the
    acceptance (output among the drafts) does not exceed the bound of the draft law. Both p-values
    are Holm-adjusted over every test of the audit; the case fails when either adjusted p-value is
    at most the audit's false-alarm rate.
    """

    name: str
    description: str
    V: int
    n: int
    scheme: str  #: the named draft scheme, or "custom" for a user's draft callable
    samples: int
    verdict: str  #: "pass" or "FAIL"
    reasons: tuple[str, ...]  #: why it failed (empty when it passed)
    test: str  #: the tests used, in words
    statistic: float  #: Pearson's chi-square
    bins: int
    df: int
    pvalue: float  #: of the output-law test (0 when an output has p = 0)
    pvalue_adjusted: float  #: Holm-adjusted over the audit's tests
    impossible: int  #: outputs on tokens with p = 0
    tv: float  #: plug-in TV distance of the binned output law from binned p
    tv_ci: tuple[float, float]  #: 95% interval for that TV (bias bound + McDiarmid; docs/guide/audit.md)
    tv_detectable: float  #: smallest token-level TV this test detects with probability >= 0.9
    pooled_mass: float  #: p of the multi-token bins (token-level TV <= binned TV + this)
    acceptance: float  #: share of outputs that are one of the step's drafts
    acceptance_se: float
    alpha_star: float  #: alpha* of the draft law (for a custom drafter: of its empirical law, an estimate)
    acceptance_bound: float  #: what the acceptance was tested against (alpha*, or the split bound)
    acceptance_z: float  #: (tested statistic - bound) / its standard error
    acceptance_pvalue: float
    acceptance_pvalue_adjusted: float

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"


@dataclass(frozen=True)
class AuditResult:
    """The outcome of :func:`mdsd_fast.audit`: ``lossless`` is False when any case fails."""

    lossless: bool
    cases: tuple[CaseResult, ...]
    scheme: str
    n: int
    samples: int  #: per case
    alpha: float  #: family-wise false-alarm rate of the whole audit
    seed: int  #: the root seed: ``rng=seed`` repeats the audit exactly
    skipped: tuple[str, ...]  #: built-in cases the scheme cannot draft from, with the reason
    seconds: float

    @property
    def failed(self) -> tuple[CaseResult, ...]:
        return tuple(c for c in self.cases if not c.passed)

    def verdict(self) -> str:
        """The one-line verdict."""
        worst = max((c.tv_detectable for c in self.cases), default=1.0)
        if self.lossless:
            return (
                f"LOSSLESS (no evidence of a bug): {len(self.cases)} cases x {self.samples} samples, scheme "
                f"{self.scheme}, n = {self.n}; false-alarm rate {self.alpha:g}; a TV of {worst:.3f} or more from p "
                "would have been detected with probability >= 0.9 on every case"
            )
        names = ", ".join(c.name for c in self.failed)
        return (
            f"NOT LOSSLESS: {len(self.failed)} of {len(self.cases)} cases fail ({names}); scheme {self.scheme}, "
            f"n = {self.n}, {self.samples} samples per case, false-alarm rate {self.alpha:g}"
        )

    def table(self) -> str:
        """One markdown row per case."""
        head = (
            "| case | V | verdict | law p (Holm) | TV (95% CI) | detectable TV | acceptance | bound | acc. p (Holm) |\n"
            "|---|---|---|---|---|---|---|---|---|"
        )
        rows = [
            f"| {c.name} | {c.V} | {c.verdict} | {c.pvalue_adjusted:.2g} | {c.tv:.4f} ({c.tv_ci[0]:.4f}-{c.tv_ci[1]:.4f})"
            f" | {c.tv_detectable:.4f} | {c.acceptance:.4f} ± {c.acceptance_se:.4f} | {c.acceptance_bound:.4f}"
            f" | {c.acceptance_pvalue_adjusted:.2g} |"
            for c in self.cases
        ]
        return "\n".join([head, *rows])

    def __str__(self) -> str:
        lines = [self.table()]
        for c in self.failed:
            lines.append(f"- {c.name}: " + "; ".join(c.reasons))
        if self.skipped:
            lines.append("skipped: " + "; ".join(self.skipped))
        lines.append(self.verdict())
        return "\n".join(lines)
