"""
Bounds from a top-k log
=======================

A serving API logs only the top-k log-probabilities of each position, so alpha* of the full
distributions is unknown. ``mf.acceptance_bounds`` returns an interval that provably holds alpha*
of every full pair consistent with the log (each unseen token at most the row's smallest logged
probability, together holding the missing mass).

Here the full rows are known: the ``skip2`` draft of the shipped SmolLM2 sample at T = 0.7 and 1
(179 positions). Each row is cut to its top k (k = 5 ... 100) and given to
``acceptance_bounds`` as ``mf.TopK`` rows; the script checks that every interval holds alpha* of
the full rows, for i.i.d. and without-replacement drafts at n = 4, and plots the widths. About
10 s of CPU time.
"""

import matplotlib.pyplot as plt
import numpy as np

import mdsd_fast as mf

n, ks = 4, [5, 10, 20, 50, 100]
ds = mf.load_dataset().select(draft="skip2")
P, Q = ds.dense(np.float64, renormalize=True)
T = ds.column("temperature")


rank = {"p": np.argsort(-P, axis=1)[:, : max(ks)], "q": np.argsort(-Q, axis=1)[:, : max(ks)]}


def top_k(X, side, k):
    """What the log holds: the k most probable token ids of each row and their probabilities."""
    ids = rank[side][:, :k]
    return mf.TopK(ids, np.take_along_axis(X, ids, axis=1), X.shape[1])


width = {}
for scheme in ["iid", "wor"]:
    alpha = mf.optimal_acceptance(P, Q, n, scheme)  # the truth, from the full rows
    for k in ks:
        low, high = mf.acceptance_bounds(top_k(P, "p", k), top_k(Q, "q", k), n, scheme)
        assert np.all(low <= alpha + 1e-12) and np.all(alpha <= high + 1e-12)
        width[scheme, k] = high - low
        if scheme == "iid" and k == 20:
            shown = (alpha, low, high)
    print(f"{scheme}: every interval holds alpha* of the full rows, at every k")

print(f"\nmean width of the interval, n = {n}")
print("k     " + "".join(f"{s + ', T=' + str(t):>14}" for s in ["iid", "wor"] for t in (0.7, 1.0)))
for k in ks:
    cells = [width[s, k][T == t].mean() for s in ["iid", "wor"] for t in (0.7, 1.0)]
    print(f"{k:<6}" + "".join(f"{c:14.4f}" for c in cells))

alpha, low, high = shown
order = np.argsort(alpha)
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 3.8))
ax0.fill_between(np.arange(alpha.size), low[order], high[order], color="C0", alpha=0.3, label="top-20 interval")
ax0.plot(alpha[order], "k.", ms=3, label="alpha* of the full rows")
ax0.set_xlabel("position (sorted by alpha*)")
ax0.set_ylabel(f"alpha*_iid, n = {n}")
ax0.legend()
for s, style in [("iid", "-o"), ("wor", "--s")]:
    for t, color in [(0.7, "C1"), (1.0, "C2")]:
        ax1.plot(ks, [width[s, k][T == t].mean() for k in ks], style, color=color, ms=4, label=f"{s}, T = {t}")
ax1.set_xscale("log")
ax1.set_xlabel("logged tokens per row (k)")
ax1.set_ylabel("mean width high - low")
ax1.legend()
fig.tight_layout()
plt.show()
