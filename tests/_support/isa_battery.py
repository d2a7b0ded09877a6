"""Every kernel family of the core on fixed inputs, written to one .npz: test_isa.py runs this script
once per build of the core (MDSD_FAST_ISA=baseline, MDSD_FAST_ISA=avx2) and compares the files bit
for bit.

    python tests/_support/isa_battery.py OUT.npz

Inputs: every 60th shipped row (V = 49,152), held-out rows (tests/_support/heldout.py: full supports,
top-k drafts) and small random rows with zeros and ties. What is recorded: alpha* for every scheme
and its certificate (i.i.d.: both the selection and the sorted route), the without-replacement
route's plan (exact acceptance, work spent, order kept), simulated and verified tokens of every
verifier with fixed seeds (the plan-free engine route included), acceptance bounds from top-20
truncations, and the exact value of a draft tree. The keys "isa" and "core" say which build ran.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import mdsd_fast as mf
from mdsd_fast import _core
from mdsd_fast import trees as T

sys.path.insert(0, str(Path(__file__).resolve().parent))
from heldout import heldout_rows  # noqa: E402


def small_rows(count: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    g = np.random.default_rng(seed)
    out = []
    for t in range(count):
        V = int(g.integers(3, 400))
        p, q = g.dirichlet(np.full(V, 0.4)), g.dirichlet(np.full(V, 0.4))
        if t % 3 == 0:  # zeros on either side
            p[g.random(V) < 0.3] = 0.0
            q[g.random(V) < 0.2] = 0.0
            q[0] = max(q[0], 1e-3)
            p[1 % V] = max(p[1 % V], 1e-3)
        if t % 4 == 0:  # tied ratios
            p, q = np.round(p * 32) + 1.0, np.round(q * 32) + 1.0
        out.append((p / p.sum(), q / q.sum()))
    return out


def main(out: str) -> None:
    res: dict[str, np.ndarray] = {"isa": np.array(_core.ISA), "core": np.array(_core.__name__)}
    ds = mf.load_dataset()
    P = np.asarray(ds.p[::60], np.float64)
    Q = np.asarray(ds.q[::60], np.float64)
    hp, hq, _ = heldout_rows(8, 3)
    big = {"shipped": (P, Q), "heldout": (hp, hq)}
    for name, (bp, bq) in big.items():
        for n in (2, 4, 8):
            for scheme in ("iid", "wor", "greedy", "topk", "top1+iid"):
                a, cert = mf.optimal_acceptance(bp, bq, n, scheme=scheme, return_certificate=True, threads=1)
                res[f"{name}/alpha/{scheme}/{n}"] = np.asarray(a)
                res[f"{name}/cert/{scheme}/{n}"] = np.concatenate([np.asarray(c, np.int64) for c in cert])
            pn, qn = bp / bp.sum(axis=1, keepdims=True), bq / bq.sum(axis=1, keepdims=True)
            a_sorted, c_sorted = _core._testing.dual_batch_sorted(pn, qn, n, "iid", certificate=True, threads=1)
            res[f"{name}/alpha/iid-sorted/{n}"] = np.asarray(a_sorted)
            res[f"{name}/cert/iid-sorted/{n}"] = np.concatenate([np.asarray(c, np.int64) for c in c_sorted])
        for n in (2, 4):  # the optimal wor route's plans (a few rows: each takes milliseconds)
            rr = mf.route_report("sweep", bp[:5], bq[:5], n, threads=1)
            for k in ("work", "best_order", "alpha_plan", "alpha_star"):
                res[f"{name}/route/{n}/{k}"] = np.asarray(rr[k])
        rows = np.arange(bp.shape[0])
        for verifier, scheme in (("optimal", "iid"), ("rrs", None), ("kseq", None), ("rrs-wor", None), ("sd", None)):
            n = 1 if verifier == "sd" else 4
            d = np.stack([mf.simulate(verifier, bp[r], bq[r], n, 1, rng=int(r), scheme=scheme).drafts[0] for r in rows])
            tok, acc = mf.verify(verifier, bp, bq, d, rng=7, scheme=scheme, threads=1)
            res[f"{name}/verify/{verifier}"] = np.concatenate([np.asarray(tok), np.asarray(acc, np.int64)])
    for i, (p, q) in enumerate(small_rows(60, 11)):
        for n in (2, 3, 5):
            for scheme in ("iid", "wor"):
                a, cert = mf.optimal_acceptance(p, q, n, scheme=scheme, return_certificate=True)
                res[f"small/{i}/{scheme}/{n}"] = np.concatenate([[a], np.asarray(cert, np.float64)])
        for verifier in ("spechub", "optimal", "sweep", "greedy"):
            scheme = "wor" if verifier == "sweep" else None
            sim = mf.simulate(verifier, p, q, 2, 64, rng=i, scheme=scheme)
            res[f"small/{i}/sim/{verifier}"] = np.concatenate([sim.tokens, sim.accepted.astype(np.int64)])
            res[f"small/{i}/acc/{verifier}"] = np.asarray(mf.acceptance(verifier, p, q, 2, scheme=scheme))
    # acceptance bounds from the top 20 of each side (truncated logs)
    for name, (bp, bq) in big.items():
        tp, tq = np.zeros_like(bp), np.zeros_like(bq)
        for r in range(bp.shape[0]):
            ip, iq = np.argsort(-bp[r])[:20], np.argsort(-bq[r])[:20]
            tp[r, ip], tq[r, iq] = bp[r, ip], bq[r, iq]
        for scheme in ("iid", "wor"):
            lo, hi = mf.acceptance_bounds(tp, tq, 4, scheme=scheme)
            res[f"{name}/bounds/{scheme}"] = np.concatenate([np.asarray(lo), np.asarray(hi)])
    # a draft tree's exact value (the tree kernels)
    g = np.random.default_rng(5)
    V = 60
    table = {(): (g.dirichlet(np.ones(V)), g.dirichlet(np.ones(V)))}

    def oracle(prefix):  # type: ignore[no-untyped-def]
        key = tuple(prefix)
        if key not in table:
            table[key] = (g.dirichlet(np.ones(V)), g.dirichlet(np.ones(V)))
        return table[key]

    tree = T.draft_branching(oracle, [3, 2], rng=1)
    for verifier in ("rrs", "kseq", "optimal"):
        tv = T.tree_value(tree, verifier)
        res[f"tree/{verifier}"] = np.concatenate([[tv.accepted], tv.profile, tv.reach])
    np.savez(out, **res)


if __name__ == "__main__":
    main(sys.argv[1])
