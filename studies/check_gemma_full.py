"""Check that the full Gemma dataset reproduces the shipped sample's rows (docs/findings/gemma.md).

``mdsd-fast extract --model gemma3-270m --full --out FULL.npz`` runs the sample's command on the
sample's prompts without the 1,024-token cut. Every shipped row must then be that full row cut:

- the same (prompt, T, position, draft) rows and the same sampled tokens;
- the shipped support inside the full row's support, with the same values there (both stored in the
  fixed-point encoding, L1 <= 1e-6 each, so within 2e-6 per distribution plus the full row's tail);
- the shipped truncation = the full row's mass outside the shipped support (within 1e-5);
- a cut distribution's own top 1,024 tokens of the full row all stored in the sample (near-ties at
  the 1,024th place aside: counted and printed).

    python studies/check_gemma_full.py FULL.npz            # exit 0 if every check holds
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import mdsd_fast as mf


def _key(m: dict[str, object]) -> tuple[object, ...]:
    return (m["prompt_id"], round(float(m["temperature"]), 6), m["position"], m["draft"])  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("full", help="the dataset written by mdsd-fast extract --model gemma3-270m --full")
    args = ap.parse_args(argv)
    sample = mf.load_dataset(model="gemma3-270m")
    full = mf.load_dataset(args.full)
    k = int(sample.info["max_tokens"])
    at = {_key(m): i for i, m in enumerate(full.meta)}
    worst = {"value": 0.0, "trunc": 0.0, "tie": 0.0}
    missing_rows, token_diff, not_inside, top_missed = 0, 0, 0, 0
    for i, m in enumerate(sample.meta):
        j = at.get(_key(m))
        if j is None:
            missing_rows += 1
            continue
        token_diff += int(full.meta[j]["token"] != m["token"])
        ids, ps, qs = sample.sparse_row(i)
        fids, pf, qf = full.sparse_row(j)
        pos = np.searchsorted(fids, ids)
        inside = (pos < fids.size) & (fids[np.minimum(pos, fids.size - 1)] == ids)
        not_inside += int((~inside).sum())
        for vs, vf, trunc in ((ps, pf, m["p_truncation"]), (qs, qf, m["q_truncation"])):
            on = np.zeros(ids.size)
            on[inside] = vf[pos[inside]]
            worst["value"] = max(worst["value"], float(np.abs(on - vs).sum()))
            worst["trunc"] = max(worst["trunc"], abs((1.0 - float(on.sum())) - float(trunc)))
            if float(trunc) > 1e-6:  # a cut distribution: its own top k of the full row are stored
                order = np.argsort(-vf, kind="stable")[:k]
                missed = np.isin(fids[order], ids, invert=True)
                top_missed += int(missed.sum())
                if missed.any():  # how far above the k-th value of the full row a missed token sits
                    worst["tie"] = max(worst["tie"], float(vf[order][missed].max() - vf[order][-1]))
    print(f"{len(sample)} shipped rows, {len(full)} full rows, V = {full.vocab_size}")
    print(f"rows missing from the full data: {missing_rows}; sampled tokens differing: {token_diff}")
    print(f"shipped tokens outside the full support: {not_inside}")
    print(f"max L1 |shipped - full| on the shipped support, per distribution: {worst['value']:.2e}")
    print(f"max |shipped truncation - full mass outside the shipped support|: {worst['trunc']:.2e}")
    print(
        f"tokens of a cut distribution's own top {k} (full row) not in the sample: {top_missed}, "
        f"at most {worst['tie']:.1e} above the {k}th value (near-ties at the cut)"
    )
    ok = missing_rows == 0 and token_diff == 0 and not_inside == 0 and worst["value"] <= 1e-5
    ok = ok and worst["trunc"] <= 1e-5
    print("reproduced" if ok else "NOT reproduced")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
