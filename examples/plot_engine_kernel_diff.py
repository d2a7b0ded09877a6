"""
Diffing an engine kernel token for token
========================================

``mf.rejection_sample`` is vLLM V1's rejection sampler in vLLM's own tensor contract, with every
random number an argument. A port of that kernel (CUDA, ROCm, NPU, Metal, ...) given the same
uniforms and the same recovery noise must emit the same tokens. Here the "port" is written in
numpy below, from the contract in the docs: accept draft x iff q(x) > 0 and p(x) / q(x) >= u,
else emit argmax max(p - q, 0) / noise and stop; greedy requests follow the argmax; a request
whose drafts are all accepted gets its bonus token.

The requests are real: the 18 ``chain6`` trees of the shipped SmolLM2 tree sample, each a chain
of 6 tokens drafted one at a time from the draft model, with p and q at every node (V = 49,152).
The first three requests are greedy. Both kernels run on 300 rounds of fresh uniforms; a port
with a common bug (recovering from p instead of the residual max(p - q, 0)) is diffed the same
way. The mean number of accepted drafts per chain is then compared with its exact value,
``trees.tree_value(chain, "sd")`` (the bigram draft ``ngram2`` is rejected almost at once, the
layer-skip drafts go further). About 10 s of CPU time.
"""

import matplotlib.pyplot as plt
import numpy as np

import mdsd_fast as mf
from mdsd_fast import trees

ts = trees.load_trees()
ids = ts.select(shape="chain6")
chains = [ts.tree(t) for t in ids]
B, k, V = len(chains), 6, ts.vocab_size
drafts = np.array([c.token[1:] for c in chains])  # (B, 6): node j's token, drafted from q[j - 1]
target = np.stack([c.p[:k] for c in chains])  # (B, 6, V): p after each prefix
draft = np.stack([c.q[:k] for c in chains])  # (B, 6, V): q the drafts were drawn from
last_p = np.stack([c.p[k] for c in chains])  # the bonus token's distribution
is_greedy = np.arange(B) < 3


def port(u, noise, bonus, recover_from_p=False):
    """vLLM's rejection sampler in numpy, one request at a time, float64 throughout."""
    out = np.full((B, k + 1), -1, dtype=np.int32)
    for b in range(B):
        for j in range(k):
            x, p, q = drafts[b, j], target[b, j], draft[b, j]
            if is_greedy[b]:
                out[b, j] = np.argmax(p)
                if out[b, j] != x:
                    break
            elif q[x] > 0 and p[x] / q[x] >= u[b, j]:
                out[b, j] = x
            else:
                residual = p if recover_from_p else np.maximum(p - q, 0.0)
                out[b, j] = np.argmax(residual / noise[b])
                break
        else:
            out[b, k] = bonus[b]
    return out


rng = np.random.default_rng(0)
rounds, differ, differ_bug = 300, 0, 0
accepted = np.zeros((rounds, B))
for r in range(rounds):
    u = rng.random((B, k))
    noise = rng.exponential(size=(B, V))
    cdf = np.cumsum(last_p, axis=1)
    bonus = np.minimum((cdf < rng.random((B, 1)) * cdf[:, -1:]).sum(axis=1), V - 1)
    out = mf.rejection_sample(
        drafts.ravel(),
        [k] * B,
        draft.reshape(B * k, V),
        target.reshape(B * k, V),
        bonus[:, None],
        uniform_probs=u.ravel(),
        recovery_noise=noise,
        is_greedy=is_greedy,
    )
    differ += int(np.any(out != port(u, noise, bonus), axis=1).sum())
    differ_bug += int(np.any(out != port(u, noise, bonus, recover_from_p=True), axis=1).sum())
    # accepted drafts = the leading outputs equal to the drafts
    accepted[r] = np.cumprod(out[:, :k] == drafts, axis=1).sum(axis=1)

print(f"{rounds * B} requests: {differ} differ from the numpy port")
print(f"{rounds * B} requests: {differ_bug} differ from the port that recovers from p")

exact = np.array([trees.tree_value(ts.compact_tree(t)[0], "sd").accepted for t in ids])
mean = accepted.mean(axis=0)
se = accepted.std(axis=0, ddof=1) / np.sqrt(rounds)
print("\nrandom requests: mean accepted drafts over the rounds against the exact value")
for b in np.flatnonzero(~is_greedy):
    draft_name = ts.meta[ids[b]]["draft"]
    print(f"chain {b:2d} ({draft_name:6}): {mean[b]:.3f} +- {se[b]:.3f}   exact {exact[b]:.3f}")

fig, ax = plt.subplots(figsize=(6, 4))
rand = ~is_greedy
ax.errorbar(exact[rand], mean[rand], yerr=2 * se[rand], fmt="o", ms=4, label="rejection_sample, 300 rounds")
ax.plot([0, k], [0, k], "k:", label="exact: tree_value(chain, 'sd')")
ax.set_xlabel("exact expected accepted drafts")
ax.set_ylabel("mean accepted drafts (2 s.e.)")
ax.set_title("vLLM's kernel on 15 real chains of 6 drafts")
ax.legend()
fig.tight_layout()
plt.show()
