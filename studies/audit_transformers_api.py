"""transformers' real ``_speculative_sampling`` through ``mdsd_fast.audit`` (docs/findings/third_party.md).

    python studies/audit_transformers_api.py [--rows 3] [--samples 5000]

Needs torch and transformers, and a build of mdsd_fast that has ``mdsd_fast.audit``. Cases: the
shipped SmolLM2-135M rows at T = 1 (draft skip2) where handing over the raw q does the most
harm; p is the target's top-50 law (what plain ``generate(do_sample=True)`` samples from).

* ``raw-q`` (#47932): each case's q is the raw softmax the candidate generator hands over; the
  custom drafter samples from its top-50 law, as the generator does.
* ``contract`` (the negative control): q is the top-50 law, the drafts come from it (scheme iid, n = 1).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np

import mdsd_fast as mf
from mdsd_fast.audit.thirdparty import transformers_sd as hs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=3)
    ap.add_argument("--scan", type=int, default=20, help="rows scanned for the worst ones")
    ap.add_argument("--samples", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=20261201)
    args = ap.parse_args(argv)
    audit = getattr(mf, "audit", None)
    if audit is None:
        print("this build of mdsd_fast has no mdsd_fast.audit", file=sys.stderr)
        return 2
    import torch

    torch.set_num_threads(1)
    P, Q = mf.load_dataset().select(draft="skip2", temperature=1.0).dense(np.float64)
    scored = []
    with np.errstate(divide="ignore"):
        for i in range(args.scan):
            p, top = hs.warped_law(np.log(P[i]), 1.0), hs.warped_law(np.log(Q[i]), 1.0)
            scored.append((hs.total_variation(hs.output_law(p, top, Q[i])[0], p), i, p, top))
    scored.sort(key=lambda r: -r[0])
    picked = scored[: args.rows]

    sampled_from: dict[int, np.ndarray] = {}

    def draft_top50(q: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        """The candidate generator's draw: from the top-50 law of the raw q it hands over."""
        law = sampled_from.get(id(q))
        if law is None:
            with np.errstate(divide="ignore"):
                law = sampled_from[id(q)] = hs.warped_law(np.log(q), 1.0)
        return rng.choice(q.size, size=n, p=law)

    raw_cases = [(p, Q[i]) for _, i, p, _ in picked]
    ctl_cases = [(p, top) for _, i, p, top in picked]
    for name, kw, cases in (
        ("raw-q", {"draft": draft_top50}, raw_cases),
        ("contract", {"scheme": "iid"}, ctl_cases),
    ):
        verify = hs.SpeculativeSampling(compact=True)
        res = audit(verify, n=1, cases=cases, samples=args.samples, rng=args.seed, **kw)
        print(f"\n{name}: lossless = {res.lossless} (transformers {hs.installed_version()})")
        print(res.table())
        for (tv, i, _, _), c in zip(picked, res.cases, strict=True):
            tv = tv if name == "raw-q" else 0.0  # the contract's exact law is p
            print(
                f"  row {i}: exact TV {tv:.4f}; audit tv {c.tv:.4f} CI {c.tv_ci[0]:.4f}-{c.tv_ci[1]:.4f}, {c.verdict}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
