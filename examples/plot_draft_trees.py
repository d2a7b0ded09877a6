"""
Draft trees: exact tokens per target call
=========================================

Engines verify a whole tree of drafts in one target call, and what a user gets is the number of
tokens emitted per call. ``trees.tree_value(tree, verifier)`` gives it *exactly* for a drafted
tree (the expected accepted length given the drafts, plus the one token every call emits), with
the per-depth profile P(accepted >= d).

The shipped tree sample (``trees.load_trees()``) holds 144 trees drafted from SmolLM2-135M's
drafts at real contexts, 18 per shape: chains, branching trees drafted without replacement,
SpecTr's K i.i.d. sequences and EAGLE's top-k trees. For each shape the script evaluates every
verifier that serves the shape's scheme, plus traversal verification (and block verification on
chains), each on the tree compacted to the union of its stored supports (the same values as on the
dense rows, ~1,000 tokens wide instead of 49,152), and plots the per-depth profile of the
``b2x4`` trees. About 5 s of CPU time, most of it ``sweep``.
"""

import matplotlib.pyplot as plt
import numpy as np

from mdsd_fast import trees

ts = trees.load_trees()
print(ts)
by_scheme = {"iid": ["sd", "rrs", "kseq", "optimal"], "wor": ["rrs-wor", "sweep"], "topk": ["topk"]}
shapes = ["chain4", "chain6", "b2x4", "b4x3", "kseq4x4", "kseq8x4", "eagle63d4", "eagle2k4"]

results = {}
profiles = {}
print(f"\n{'shape':10} {'verifier':10} {'tokens/call (95% t)':>24}")
for shape in shapes:
    batch = [ts.compact_tree(t)[0] for t in ts.select(shape=shape)]
    n_root = len(batch[0].draft_tokens(0))
    names = [v for v in by_scheme[batch[0].scheme[0]] if not (v == "sd" and n_root > 1)]
    names += ["block", "traversal"] if shape.startswith("chain") else ["traversal"]
    for name in names:
        values = [trees.tree_value(tree, name) for tree in batch]
        tpc = np.array([v.accepted + 1 for v in values])
        half = 2.11 * tpc.std(ddof=1) / np.sqrt(tpc.size)  # t quantile, 17 degrees of freedom
        results[shape, name] = tpc.mean(), half
        if shape == "b2x4":
            profiles[name] = np.mean([v.profile for v in values], axis=0)
        print(f"{shape:10} {name:10} {tpc.mean():8.3f} ({tpc.mean() - half:.2f}-{tpc.mean() + half:.2f})")

fig, (ax, ax1) = plt.subplots(1, 2, figsize=(11, 3.8), width_ratios=[2.2, 1])
colors = {}
for i, shape in enumerate(shapes):
    names = [name for s, name in results if s == shape]
    for j, name in enumerate(names):
        label = None if name in colors else name  # one legend entry per verifier
        color = colors.setdefault(name, f"C{len(colors)}")
        mean, half = results[shape, name]
        x = i + 0.8 * (j - (len(names) - 1) / 2) / len(names)
        ax.errorbar(x, mean, yerr=half, fmt="o", color=color, ms=4, label=label)
ax.set_xticks(range(len(shapes)), shapes)
ax.set_ylabel("tokens per target call (95% t)")
ax.set_title("18 real drafted trees per shape (SmolLM2-135M)")
ax.set_ylim(top=4.4)  # room for the legend
ax.legend(ncol=6, fontsize=8, loc="upper center")
for name, profile in profiles.items():
    ax1.plot(np.arange(1, profile.size + 1), profile, "-o", color=colors[name], ms=4, label=name)
ax1.set_xticks(np.arange(1, 5))
ax1.set_xlabel("depth d")
ax1.set_ylabel("P(accepted >= d)")
ax1.set_title("b2x4, mean over 18 trees")
ax1.legend(fontsize=8)
fig.tight_layout()
plt.show()
