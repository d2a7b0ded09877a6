"""vLLM V1's rejection sampler ported to CPU torch: what a user would run instead of
mdsd_fast.rejection_sample (bench/engines/rejection_sample_speed.py times the two side by side).

Written from vllm-project/vllm vllm/v1/sample/rejection_sampler.py (rejection_sample and its
triton kernels: rejection_greedy_sample_kernel, sample_recovered_tokens_kernel,
rejection_random_sample_kernel). The triton kernels' per-program loops become torch ops: the
recovered token of every draft position at once (one noise row per request, argmax of
max(p - q, 0) / noise), the accept test per position, then each request's output row. Random
numbers are arguments (vLLM draws them inside); no input check, as in vLLM.
"""

from __future__ import annotations

import torch

PLACEHOLDER_TOKEN_ID = -1


def rejection_sample(
    draft_token_ids: torch.Tensor,  # [T] int64
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: torch.Tensor,  # [B] int64
    draft_probs: torch.Tensor | None,  # [T, V]
    target_probs: torch.Tensor,  # [T, V]
    bonus_token_ids: torch.Tensor,  # [B, 1]
    uniform_probs: torch.Tensor,  # [T] float64
    noise: torch.Tensor,  # [B, V] Exp(1), vLLM's q of sample_recovered_tokens
) -> torch.Tensor:
    """vLLM's all-random path (``sampling_metadata.all_random``): int32 [B, max_spec_len + 1]."""
    batch_size = len(num_draft_tokens)
    num_tokens = draft_token_ids.shape[0]
    out = torch.full((batch_size, max_spec_len + 1), PLACEHOLDER_TOKEN_ID, dtype=torch.int32)
    counts = torch.tensor(num_draft_tokens)
    req = torch.repeat_interleave(torch.arange(batch_size), counts)  # request of each position
    rows = torch.arange(num_tokens)
    # sample_recovered_tokens_kernel, every (request, position) program at once
    if draft_probs is None:
        prob = target_probs.clone()
        prob[rows, draft_token_ids] = 0
    else:
        prob = (target_probs - draft_probs).clamp_min_(0)
    recovered = (prob / noise[req]).argmax(dim=-1)
    # rejection_random_sample_kernel: the accept test of every position
    draft_p = torch.ones(num_tokens) if draft_probs is None else draft_probs[rows, draft_token_ids]
    target_p = target_probs[rows, draft_token_ids]
    accepted = (draft_p > 0) & (target_p / draft_p >= uniform_probs)
    token = torch.where(accepted, draft_token_ids, recovered).to(torch.int32)
    # each request: its tokens up to and including the first rejection, then the bonus if none
    start = cu_num_draft_tokens - counts
    pos = rows - start[req]
    rej = (~accepted).to(torch.int64)
    csum = torch.cumsum(rej, 0)
    rejected_before = csum - rej - torch.where(start[req] > 0, csum[(start[req] - 1).clamp_min(0)], 0)
    keep = rejected_before == 0
    out[req[keep], pos[keep]] = token[keep]
    all_ok = torch.zeros(batch_size, dtype=torch.int64).index_add_(0, req, rej) == 0
    b = torch.nonzero(all_ok).flatten()
    out[b, counts[b]] = bonus_token_ids[b, 0].to(torch.int32)
    return out
