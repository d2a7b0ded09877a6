"""rejection_sample's public call beside its C++ kernel alone and beside a CPU-torch port of vLLM's
rejection sampler, side by side in one process.

Run:  python bench/engines/rejection_sample_speed.py [--rounds 30] [--runs 3] [--json FILE]

B = 32 requests of k = 4 drafts (T = 128 rows), float32 rows (vLLM's dtype), V = 1,000, 32,000 and
49,152. Three calls on the same arrays, interleaved within every round, each timed in thread CPU
time with one thread (torch.set_num_threads(1), threads=1):
  public  mf.rejection_sample(...) on the float32 NumPy arrays and the list of counts, as vLLM holds
          them, every check included;
  kernel  _core.engines.rejection_sample(...), the compiled entry alone, on the same arrays with the
          counts an int64 array and max_spec_len given: it checks the ids and validates every row,
          uniform and noise row in its own pass (the public call adds the types, shapes, counts);
  torch   bench/engines/vllm_torch_port.py on torch tensors sharing those arrays' memory.
Every round runs the torch port right before the public call and right before the kernel (in
alternating order), so the two start from the same caches, those its (T, V) temporaries leave, as
after an engine's forward pass. The ratios are medians of the per-round ratios (the torch time of
a round: the mean of its two runs); a second loop times the public call and the kernel alone,
warm, alternating which goes first; --runs repeats the whole measurement. The three outputs are
compared first (the public call and the kernel bit for bit; the torch port, in float32
arithmetic, token for token where its float32 ratios do not tie). Then tree_speculative_sampling
(SGLang's rule, B trees of --nodes float32 nodes) beside its compiled entry, the two alone, warm.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _support.timing import machine_info  # noqa: E402
from vllm_torch_port import rejection_sample as torch_port  # noqa: E402

import mdsd_fast as mf  # noqa: E402
from mdsd_fast import _core  # noqa: E402


def case(V: int, B: int, k: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    T = B * k
    tp = rng.dirichlet(np.full(V, 0.05), size=T).astype(np.float32)
    dp = rng.dirichlet(np.full(V, 0.05), size=T).astype(np.float32)
    ids = np.array([rng.choice(V, p=q / q.sum()) for q in dp.astype(np.float64)])
    return dict(
        ids=ids, counts=[k] * B, dp=dp, tp=tp, bonus=rng.integers(0, V, (B, 1)), u=rng.random(T),
        noise=rng.exponential(size=(B, V)).astype(np.float32),
    )  # fmt: skip


def calls(c: dict) -> dict:
    counts = np.asarray(c["counts"], dtype=np.int64)
    bonus = np.ascontiguousarray(c["bonus"][:, 0], dtype=np.int64)
    k = max(c["counts"])
    cu = np.cumsum(counts)
    t = {name: torch.from_numpy(np.asarray(c[name])) for name in ("ids", "dp", "tp", "bonus", "u", "noise")}
    tcu = torch.from_numpy(cu)
    tol = 1e-4

    def public() -> np.ndarray:
        return mf.rejection_sample(c["ids"], c["counts"], c["dp"], c["tp"], c["bonus"], uniform_probs=c["u"],
                                   recovery_noise=c["noise"], threads=1)  # fmt: skip

    def kernel() -> np.ndarray:
        return _core.engines.rejection_sample(c["ids"], counts, None, c["dp"], c["tp"], bonus, None, c["u"],
                                              c["noise"], k, tol, 1)  # fmt: skip

    def port() -> torch.Tensor:
        return torch_port(t["ids"], c["counts"], k, tcu, t["dp"], t["tp"], t["bonus"], t["u"], t["noise"])

    return {"public": public, "kernel": kernel, "torch": port}


def _timed(fn) -> float:  # type: ignore[no-untyped-def]
    t0 = time.thread_time()
    fn()
    return time.thread_time() - t0


def warm_ratio(fns: dict, rounds: int) -> float:
    """The public call over the kernel, the two alone (warm), alternating which goes first."""
    pair: dict[str, list[float]] = {"public": [], "kernel": []}
    for r in range(rounds):
        for n in ("public", "kernel") if r % 2 else ("kernel", "public"):
            pair[n].append(_timed(fns[n]))
    return statistics.median(x / y for x, y in zip(pair["public"], pair["kernel"], strict=True))


def tree_calls(V: int, B: int, N: int, seed: int) -> dict:
    """tree_speculative_sampling (SGLang's rule) on B trees of N nodes (node i's first child 2i + 1,
    its next sibling 2i + 2), float32 rows, and its compiled entry alone on the same arrays."""
    rng = np.random.default_rng(seed)
    nxt, sib = np.full((B, N), -1), np.full((B, N), -1)
    for i in range(N):
        nxt[:, i] = 2 * i + 1 if 2 * i + 1 < N else -1
        sib[:, i] = i + 1 if i % 2 and i + 1 < N else -1
    tp = rng.dirichlet(np.full(V, 0.05), size=B * N).astype(np.float32).reshape(B, N, V)
    cand, coins, final = rng.integers(0, V, (B, N)), rng.random((B, N)), rng.random(B)

    def public() -> tuple:
        return tuple(mf.tree_speculative_sampling(cand, nxt, sib, tp, uniform_samples=coins,
                                                  uniform_samples_for_final_sampling=final, threads=1))  # fmt: skip

    def kernel() -> tuple:
        return _core.engines.tree_sample(cand, None, nxt, sib, coins, final, tp, None, 0, "sglang", "", 1.0, 1.0, 0.0,
                                         1e-4, 1)  # fmt: skip

    return {"public": public, "kernel": kernel}


def measure(fns: dict, rounds: int) -> dict[str, float]:
    for f in fns.values():
        f()  # warm-up
    # Three-way: the torch port runs right before the public call and right before the kernel, so
    # both start from the caches its (T, V) temporaries leave (as after an engine's forward pass),
    # the two in alternating order; its time in a round is the mean of its two runs.
    times: dict[str, list[float]] = {"public": [], "kernel": [], "torch": []}
    for r in range(rounds):
        t: dict[str, float] = {}
        for n in ("public", "kernel") if r % 2 else ("kernel", "public"):
            t.setdefault("torch", 0.0)
            t["torch"] += _timed(fns["torch"]) / 2
            t[n] = _timed(fns[n])
        for n, x in t.items():
            times[n].append(x)
    ratio = lambda a, b: statistics.median(x / y for x, y in zip(times[a], times[b], strict=True))  # noqa: E731
    return {
        "public_over_kernel_alone": warm_ratio(fns, rounds),
        "public_s": statistics.median(times["public"]),
        "kernel_s": statistics.median(times["kernel"]),
        "torch_s": statistics.median(times["torch"]),
        "public_over_kernel": ratio("public", "kernel"),
        "public_over_torch": ratio("public", "torch"),
        "kernel_over_torch": ratio("kernel", "torch"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--V", type=int, nargs="+", default=[1000, 32000, 49152])
    ap.add_argument("--B", type=int, default=32)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--nodes", type=int, default=8, help="nodes per tree of the tree_speculative_sampling timing")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", default="", help="write the table file (bench/performance.py's format) here")
    ap.add_argument("--machine", default="", help="the machine line of the table file")
    args = ap.parse_args()
    torch.set_num_threads(1)
    load = os.getloadavg()[0]
    rows = []
    print(f"load average {load:.1f} on {os.cpu_count()} cores; thread CPU time, one thread")
    print(f"{'V':>7} {'run':>3} {'public ms':>10} {'kernel ms':>10} {'torch ms':>9} {'pub/kern':>9} {'pub/torch':>9} "
          f"{'pub/kern (pair)':>15}")  # fmt: skip
    for V in args.V:
        c = case(V, args.B, args.k, seed=V)
        fns = calls(c)
        a, b, t = fns["public"](), fns["kernel"](), fns["torch"]().numpy()
        assert np.array_equal(a, b), "the public call and the kernel differ"
        agree = float((a == t).all(axis=1).mean())
        for run in range(args.runs):
            m = measure(fns, args.rounds)
            print(f"{V:>7,} {run + 1:>3} {m['public_s'] * 1e3:>10.2f} {m['kernel_s'] * 1e3:>10.2f} "
                  f"{m['torch_s'] * 1e3:>9.2f} {m['public_over_kernel']:>9.3f} {m['public_over_torch']:>9.3f} "
                  f"{m['public_over_kernel_alone']:>15.3f}")  # fmt: skip
            rows.append({"V": V, "B": args.B, "k": args.k, "run": run + 1, "torch_rows_agree": agree, **m})
    print(f"tree_speculative_sampling, B = {args.B} trees of {args.nodes} nodes: public / kernel, the two alone")
    trees = []
    for V in args.V:
        fns = tree_calls(V, args.B, args.nodes, seed=V)
        for a, b in zip(fns["public"](), fns["kernel"](), strict=True):
            assert np.array_equal(a, b), "the public call and the kernel differ"
        ratios = [warm_ratio(fns, args.rounds) for _ in range(args.runs)]
        kernel_ms = statistics.median(_timed(fns["kernel"]) for _ in range(args.rounds)) * 1e3
        print(f"{V:>7,} kernel {kernel_ms:.2f} ms  public / kernel " + " / ".join(f"{r:.3f}" for r in ratios))
        trees.append([f"{V:,}", f"{kernel_ms:.2f}", " / ".join(f"{r:.2f}" for r in ratios)])
    after = os.getloadavg()[0]
    print(f"load average after: {after:.1f}")
    if args.json:
        by_v: dict[int, list[dict]] = {}
        for r in rows:
            by_v.setdefault(r["V"], []).append(r)

        def runs(rs: list[dict], key: str, scale: float = 1.0) -> str:
            return " / ".join(f"{r[key] * scale:.2f}" for r in rs)

        table = [
            [f"{V:,}", runs(rs, "public_s", 1e3), runs(rs, "kernel_s", 1e3), runs(rs, "torch_s", 1e3),
             runs(rs, "public_over_kernel"), runs(rs, "public_over_torch"), runs(rs, "public_over_kernel_alone"),
             f"{rs[0]['torch_rows_agree']:.0%}"]
            for V, rs in by_v.items()
        ]  # fmt: skip
        info = machine_info()
        doc = {
            "title": "Engines: rejection_sample beside its kernel and a CPU-torch port of vLLM's sampler",
            "command": "python bench/engines/rejection_sample_speed.py --json bench/results/engines/rejection_sample_speed.json",
            "machine": args.machine or f"{info['cpu']}, {info['cores']} cores, load {load:.1f}-{after:.1f}, {_core.ISA} build",
            "note": f"B = {args.B} requests of k = {args.k} float32 drafts; ms of thread CPU time per call (median of "
            f"{args.rounds} interleaved rounds, each running the torch port right before the public call and right "
            "before the kernel, so that the two start from the caches its (T, V) temporaries leave), "
            "one thread; ratios are medians of per-round ratios; one value per run. The kernel: the compiled entry "
            "alone, which checks the ids and validates every row in its own pass. 'The two alone': public "
            "and kernel interleaved without the torch port between them (its (T, V) temporaries evict the caches). "
            "torch agrees: the share of requests where the port (float32 arithmetic) emits the same tokens. "
            f"Second table: tree_speculative_sampling (SGLang's rule) on B = {args.B} trees of {args.nodes} float32 "
            "nodes beside its compiled entry, the two alone.",
            "tables": [{"columns": ["V", "public ms", "kernel ms", "torch port ms", "public / kernel",
                                    "public / torch", "public / kernel, the two alone", "torch agrees"],
                        "rows": table},
                       {"columns": ["V", "tree kernel ms", "tree public / kernel, the two alone"], "rows": trees}],
        }  # fmt: skip
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump(doc, fh, indent=1)


if __name__ == "__main__":
    main()
