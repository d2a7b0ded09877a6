"""Third-party verification code under the package's audit contract.

Where the code is an installable package, the adapter wraps the third party's own function
(imported lazily, only when an adapter is built) as ``verify(p, q, drafts, rng) -> token``, so the
code that runs is theirs and only the plumbing is ours. Where it is not (research repositories),
the verification step is ported line by line from a pinned commit, with its exact output law.
``import mdsd_fast`` imports none of this.

* :mod:`mdsd_fast.audit.thirdparty.transformers_sd`: Hugging Face transformers' speculative-sampling
  step (``transformers.generation.utils._speculative_sampling``) and the laws its candidate
  generators draft from and hand over (docs/findings/third_party.md).
* :mod:`mdsd_fast.audit.thirdparty.spectr_gbv`: the K-sequence block verification of
  junemily/SpecTr-GBV (a port).
* :mod:`mdsd_fast.audit.thirdparty.subspec_traversal`: the unofficial Traversal Verification of
  brian030128/subspec_v2 (a port).
"""
