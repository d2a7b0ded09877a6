"""
A log of many positions, in bounded memory
==========================================

Serving systems log the top-k log-probabilities of each position; scoring the same text with a
draft model gives the draft's top-k. ``mdsd_fast.logs`` stores such pairs as a directory of
Parquet shards with a manifest (the ``logs`` extra, pyarrow), and reads them back chunk by chunk,
so memory is bounded by the chunk, never by the log.

This script writes a log of ``POSITIONS`` generated top-20 positions (V = 32,000; two drafts
that agree with the target on 70 % and 40 % of the logged tokens; 1-15 % of each row's mass
unlogged) into a temporary directory with ``LogWriter``, in blocks, then streams it with
``open_logs(...).iter_chunks`` and bounds alpha*_iid at n = 4 on every position with
``acceptance_bounds`` (the log report, ``mdsd-fast report --dataset DIR``, does the same and
more). With the default 100,000 positions it takes about 15 s of CPU time; a million positions
(``POSITIONS = 1_000_000``) take ten times as long, in the same memory.
"""

import shutil
import tempfile
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import mdsd_fast as mf
from mdsd_fast.logs import LogWriter, open_logs

POSITIONS, BLOCK, V, K = 100_000, 25_000, 32_000, 20
rng = np.random.default_rng(0)


def top_k_side(ids_in_bucket):
    """One side of a block: K ascending distinct ids (one per bucket of V / K) and their
    probabilities, decreasing with rank, with 1-15 % of the mass left unlogged."""
    rows = ids_in_bucket.shape[0]
    ids = np.arange(K) * (V // K) + ids_in_bucket
    logits = 0.7 * rng.normal(size=(rows, K)) - np.arange(K) * rng.uniform(0.05, 0.4, size=(rows, 1))
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    # each unlogged token is at most the smallest logged probability: keep the unseen mass within that
    unseen = np.minimum(rng.uniform(0.01, 0.15, size=(rows, 1)), 0.8 * probs.min(axis=1, keepdims=True) * (V - K))
    return ids.ravel(), (probs * (1 - unseen)).astype(np.float32).ravel()


def block(rows, overlap):
    target = rng.integers(0, V // K, size=(rows, K))
    same = rng.random((rows, K)) < overlap  # where the draft logs the target's token
    draft = np.where(same, target, rng.integers(0, V // K, size=(rows, K)))
    ptr = np.arange(rows + 1) * K
    return (ptr, *top_k_side(target)), (ptr, *top_k_side(draft))


folder = Path(tempfile.mkdtemp()) / "log"
start = time.perf_counter()
with LogWriter(folder, vocab_size=V, rows_per_shard=50_000) as writer:
    for first in range(0, POSITIONS, BLOCK):
        rows = min(BLOCK, POSITIONS - first)
        name, overlap = ("small", 0.7) if (first // BLOCK) % 2 == 0 else ("tiny", 0.4)
        p, q = block(rows, overlap)
        no = np.zeros(rows, dtype=bool)
        meta = {"draft": np.full(rows, name), "domain": np.full(rows, "chat"), "temperature": np.ones(rows)}
        writer.write(p, q, p_complete=no, q_complete=no, meta=meta)
logs = open_logs(folder)
size = sum(f.stat().st_size for f in folder.iterdir()) / 2**20
print(
    f"wrote {POSITIONS:,} positions in {time.perf_counter() - start:.1f} s: {size:.0f} MiB, files {sorted(f.name for f in folder.iterdir())}"
)

start = time.perf_counter()
results = {}
for name in ["small", "tiny"]:
    lows, highs = [], []
    for chunk in logs.iter_chunks(8192, draft=name):  # one Parquet batch at a time
        low, high = mf.acceptance_bounds(chunk.topk("p"), chunk.topk("q"), 4, "iid")
        lows.append(low)
        highs.append(high)
    results[name] = np.concatenate(lows), np.concatenate(highs)
shutil.rmtree(folder.parent)  # the log was only for this demonstration
print(f"bounded alpha*_iid (n = 4) at every position in {time.perf_counter() - start:.1f} s\n")
print(f"{'draft':6} {'positions':>10} {'mean low':>9} {'mean high':>10} {'median width':>13}")
for name, (low, high) in results.items():
    print(f"{name:6} {low.size:10,} {low.mean():9.4f} {high.mean():10.4f} {np.median(high - low):13.4f}")

fig, ax = plt.subplots(figsize=(7, 3.6))
bins = np.linspace(0, 1, 51)
for k, (name, (low, high)) in enumerate(results.items()):
    ax.hist(low, bins=bins, histtype="step", color=f"C{k}", ls="--", label=f"{name}: low end")
    ax.hist(high, bins=bins, histtype="step", color=f"C{k}", label=f"{name}: high end")
ax.set_xlabel("alpha*_iid, n = 4: ends of the interval")
ax.set_ylabel("positions")
ax.set_title(f"{POSITIONS:,} logged top-{K} positions")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
