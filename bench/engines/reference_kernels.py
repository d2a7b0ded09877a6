"""Time of the engine reference kernels (mdsd_fast.engines) at a real vocabulary size.

Run:  python bench/engines/reference_kernels.py [--threads 1 2]

vLLM's rejection_sample on B = 32 requests of 4 drafts, and a 3 x 3 token tree (N = 13 nodes) per
request for B = 4 requests, verified by SGLang's rule and by registry verifiers, V = 49,152. Reports
the wall time of one call, input validation included (docs/guide/engines.md has the numbers).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import mdsd_fast as mf

V = 49_152


def _rows(rng: np.random.Generator, m: int) -> np.ndarray:
    return rng.dirichlet(np.full(V, 0.05), size=m)


def _seconds(fn, repeats: int) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)

    B, k = 32, 4
    T = B * k
    tp, dp = _rows(rng, T).astype(np.float32), _rows(rng, T)
    ids = np.array([rng.choice(V, p=q) for q in dp])
    dp32 = dp.astype(np.float32)
    u, noise, bonus = rng.random(T), rng.exponential(size=(B, V)), rng.integers(0, V, (B, 1))
    for threads in args.threads:
        s = _seconds(
            lambda: mf.rejection_sample(
                ids, [k] * B, dp32, tp, bonus, uniform_probs=u, recovery_noise=noise, threads=threads
            ),
            args.repeats,
        )
        print(f"rejection_sample  B={B} k={k} V={V} float32 threads={threads}: {s * 1e3:.1f} ms")

    # a 3 x 3 tree per request: children drafted without replacement from the parent's q
    B, N = 4, 13
    nxt = np.array([1, 4, 7, 10] + [-1] * 9)
    sib = np.array([-1, 2, 3, -1, 5, 6, -1, 8, 9, -1, 11, 12, -1])
    tp3, dp3 = _rows(rng, B * N).reshape(B, N, V), _rows(rng, B * N).reshape(B, N, V)
    cand = np.zeros((B, N), dtype=np.int64)
    for b in range(B):
        for parent, first in ((0, 1), (1, 4), (2, 7), (3, 10)):
            with np.errstate(divide="ignore"):
                keys = np.log(dp3[b, parent]) + rng.gumbel(size=V)
            cand[b, first : first + 3] = np.argsort(-keys)[:3]
    coins, final = rng.random((B, N)), rng.random(B)
    for verifier, scheme in (
        ("sglang", None),
        ("rrs", "iid"),
        ("rrs-wor", "wor"),
        ("optimal", "iid"),
        ("sweep", "wor"),
    ):
        kw = {"draft_probs": None} if scheme is None else {"draft_probs": dp3, "scheme": scheme}
        s = _seconds(
            lambda: mf.tree_speculative_sampling(
                cand,
                np.tile(nxt, (B, 1)),
                np.tile(sib, (B, 1)),
                tp3,
                uniform_samples=coins,
                uniform_samples_for_final_sampling=final,
                verifier=verifier,
                threads=max(args.threads),
                **kw,
            ),  # fmt: skip
            1 if verifier == "sweep" else args.repeats,
        )
        print(
            f"tree_speculative_sampling {verifier:8s} B={B} N={N} V={V} threads={max(args.threads)}: {s * 1e3:.1f} ms"
        )


if __name__ == "__main__":
    main()
