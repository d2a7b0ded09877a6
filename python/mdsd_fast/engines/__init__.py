"""Reference kernels in the inference engines' own tensor contracts, every uniform an argument.

:func:`rejection_sample` is vLLM V1's rejection sampler, :func:`tree_speculative_sampling` SGLang's
tree verification (with SGLang's rule or any registry verifier at each node); docs/guide/engines.md has the
contracts, the layouts and the upstream revisions they mirror.
"""

from __future__ import annotations

from .kernels import TREE_VERIFIERS, TreeVerification, rejection_sample, tree_speculative_sampling

__all__ = ["rejection_sample", "tree_speculative_sampling", "TreeVerification", "TREE_VERIFIERS"]
