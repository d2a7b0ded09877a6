"""
Auditing a verifier for losslessness
====================================

``mf.audit`` checks anyone's verifier: it draws draft tuples on a suite of (p, q) cases built to
expose the known bugs, calls the verifier, and tests the output law against p and the acceptance
against alpha*, with a stated false-alarm rate (1e-3 per audit) and, per case, the smallest TV
from p it would detect.

Below, recursive rejection sampling for i.i.d. drafts is written in numpy in the audit's batched
form (``verify(p, q, drafts, rng) -> tokens`` for a block of tuples), once correctly and once
with a bug found in a public EAGLE fork: a draft equal to an earlier rejected one is skipped
without updating the residual. The package's own ``rrs`` (through
``audit.registry_verifier``) and the correct port pass; the broken port fails. Each audit is 15
cases x 20,000 tuples at n = 2; about 2 s of CPU time.
"""

import matplotlib.pyplot as plt
import numpy as np

import mdsd_fast as mf


def make_rrs(skip_duplicates=False):
    def verify(p, q, drafts, rng):
        """Recursive rejection sampling over i.i.d. drafts, all tuples of one case at once."""
        B, n = drafts.shape
        residuals = [p]  # residual after k rejections: normalise(max(r - q, 0))
        for _ in range(n):
            r = np.maximum(residuals[-1] - q, 0.0)
            residuals.append(r / r.sum() if r.sum() > 0 else residuals[-1])
        residuals = np.array(residuals)
        level = np.zeros(B, dtype=np.int64)  # how many rejections each tuple has had
        out = np.full(B, -1, dtype=np.int64)
        for j in range(n):
            x = drafts[:, j]
            active = out < 0
            if skip_duplicates:  # the bug: a repeated draft is skipped, the residual not updated
                active &= ~np.any(drafts[:, :j] == x[:, None], axis=1)
            ratio = residuals[level, x] / q[x]
            accept = active & (rng.random(B) < ratio)
            out[accept] = x[accept]
            level[active & ~accept] += 1
        for k in np.unique(level[out < 0]):  # all rejected: draw from the last residual
            rows = np.flatnonzero((out < 0) & (level == k))
            cdf = np.cumsum(residuals[k])
            out[rows] = np.minimum(np.searchsorted(cdf, rng.random(rows.size) * cdf[-1], "right"), p.size - 1)
        return out

    return verify


audits = {
    "rrs (registry)": mf.audit(mf.audit.registry_verifier("rrs"), "iid", 2, rng=0),
    "rrs (numpy port)": mf.audit(make_rrs(), "iid", 2, rng=0, batched=True),
    "rrs skipping duplicates": mf.audit(make_rrs(skip_duplicates=True), "iid", 2, rng=0, batched=True),
}
for name, res in audits.items():
    print(f"{name}: {res.verdict()}")
    for case in res.cases:
        if case.verdict != "pass":
            print(f"    {case.name}: TV {case.tv:.3f} (detectable {case.tv_detectable:.3f}); {'; '.join(case.reasons)}")

cases = [c.name for c in audits["rrs (registry)"].cases]
x = np.arange(len(cases))
fig, ax = plt.subplots(figsize=(9, 3.8))
for k, (name, res) in enumerate(audits.items()):
    ax.bar(x + 0.27 * (k - 1), [c.tv for c in res.cases], width=0.27, label=name)
detectable = [c.tv_detectable for c in audits["rrs (registry)"].cases]
ax.plot(x, detectable, "k_", ms=14, mew=2, label="detectable TV (power 0.9)")
ax.set_xticks(x, cases, rotation=60, ha="right", fontsize=8)
ax.set_ylabel("TV of the output law from p")
ax.set_title("mf.audit, scheme iid, n = 2")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
