"""
Verifying your own drafts
=========================

``mf.verify`` verifies draft tuples that *you* drew (as an engine does), and ``mf.simulate``
draws and verifies in C++. Either way a lossless verifier's output tokens must be distributed as
the target p, whatever the drafts were. This script checks that on one real position.

It takes the position of the shipped SmolLM2 sample (``skip2`` draft, T = 1) whose alpha*_iid at
n = 3 is closest to 0.7, draws 200,000 tuples of 3 i.i.d. drafts from q with numpy, verifies
them with ``rrs``, ``kseq`` and ``optimal``, and compares the output frequencies with p: the 20
most probable tokens each in their own bin, the rest pooled, by Pearson's chi-square (about 1 per
degree of freedom for a lossless verifier). As a control it also breaks ``rrs`` the classic way
(after a rejection, resample from p instead of from the residual), which the same check catches.
About 5 s of CPU time.
"""

import matplotlib.pyplot as plt
import numpy as np

import mdsd_fast as mf

n, samples = 3, 200_000
ds = mf.load_dataset().select(draft="skip2", temperature=1.0)
alpha = mf.optimal_acceptance(ds.p, ds.q, n, "iid")
i = int(np.argmin(np.abs(alpha - 0.7)))
P, Q = ds.dense(np.float64, renormalize=True)
p, q = P[i], Q[i]
print(f"position {i}: alpha*_iid(n={n}) = {alpha[i]:.4f}, V = {p.size}")

rng = np.random.default_rng(0)
drafts = rng.choice(p.size, size=(samples, n), p=q)  # your drafter: n i.i.d. draws from q

top = np.argsort(p)[::-1][:20]
bins = np.zeros(p.size, dtype=np.int64) + 20  # token -> bin: the top 20 alone, the rest pooled
bins[top] = np.arange(20)
expected = np.bincount(bins, weights=p, minlength=21) * samples


def chi_square(tokens):
    observed = np.bincount(bins[tokens], minlength=21)
    return float(np.sum((observed - expected) ** 2 / expected)), observed / samples


outputs = {}
print(f"\n{'verifier':10} {'acceptance':>10} {'exact':>8} {'chi2 / 20 df':>13}")
for name in ["rrs", "kseq", "optimal"]:
    tokens, accepted = mf.verify(name, p, q, drafts, rng=1)
    exact = mf.acceptance(name, p, q, n)
    chi2, freq = chi_square(tokens)
    outputs[name] = freq
    print(f"{name:10} {accepted.mean():10.4f} {exact:8.4f} {chi2:13.1f}")

# The same in C++ end to end: drafts drawn by the package, then verified.
sim = mf.simulate("optimal", p, q, n, samples, rng=2)
chi2, _ = chi_square(sim.tokens)
print(f"{'simulate':10} {sim.accepted.mean():10.4f} {alpha[i]:8.4f} {chi2:13.1f}  (optimal)")

# A broken verifier: keep rrs's accepted drafts, but after a rejection draw from p itself.
tokens, accepted = mf.verify("rrs", p, q, drafts, rng=1)
redraw = rng.choice(p.size, size=samples, p=p)
broken = np.where(accepted, tokens, redraw)
chi2, outputs["broken rrs"] = chi_square(broken)
print(f"{'broken rrs':10} {accepted.mean():10.4f} {'':8} {chi2:13.1f}  <- not distributed as p")

fig, ax = plt.subplots(figsize=(9, 3.6))
x = np.arange(21)
ax.bar(x, expected / samples, color="lightgray", label="p (target)")
for k, (name, freq) in enumerate(outputs.items()):
    ax.plot(x + 0.15 * (k - 1.5), freq, "o", ms=4, label=name)
ax.set_xticks(x, [str(t) for t in top] + ["rest"], rotation=90, fontsize=7)
ax.set_xlabel("token id (the 20 most probable under p, then the rest)")
ax.set_ylabel("probability / output frequency")
ax.set_yscale("log")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
