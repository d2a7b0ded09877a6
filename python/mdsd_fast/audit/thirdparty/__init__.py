"""Adapters that put real third-party verification code under the package's audit contract.

Each adapter wraps the third party's own function (imported lazily, only when an adapter is
built) as ``verify(p, q, drafts, rng) -> token``, the one-position contract of the audit, so the
code that runs is theirs and only the plumbing is ours. ``import mdsd_fast`` imports none of this.

* :mod:`mdsd_fast.audit.thirdparty.transformers_sd`: Hugging Face transformers' speculative-sampling
  step (``transformers.generation.utils._speculative_sampling``) and the laws its candidate
  generators draft from and hand over (docs/findings/third_party.md).
"""
