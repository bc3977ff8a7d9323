"""Attention maps, the explanation of one head, heatmaps, the HTML page and its browser test."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from attenzione.cli import app
from attenzione.config import ModelConfig, search_config
from attenzione.data import SentencePieceTokenizer, WordTokenizer
from attenzione.model.transformer import Transformer
from attenzione.translator.explain import collect_attention, explain_head, explanation_data
from attenzione.translator.translator import Translator
from attenzione.viz import KINDS, AttentionMaps, display_tokens, plot_attention, save_heatmaps
from attenzione.viz.html import render_html, save_html
from serve_helpers import chrome

SENTENCES = [
    f"the {a} {n} is {v} today"
    for a in ("red", "old", "big")
    for n in ("cat", "dog", "house")
    for v in ("here", "there")
]
ITALIAN = [
    f"il {n} {a} è {v} oggi"
    for a in ("rosso", "vecchio", "grande")
    for n in ("gatto", "cane", "libro")
    for v in ("qui", "lì")
]


def _translator(norm: str = "post") -> Translator:
    torch.manual_seed(0)
    src = WordTokenizer.train(SENTENCES)
    tgt = SentencePieceTokenizer.train(ITALIAN * 3, vocab_size=24)
    cfg = ModelConfig(
        src_vocab_size=src.vocab_size,
        tgt_vocab_size=tgt.vocab_size,
        d_model=20,  # decoupled: 3 heads of 8
        n_heads=3,
        d_head=8,
        d_ff=32,
        n_enc_layers=2,
        n_dec_layers=2,
        dropout=0.0,
        max_len=40,
        norm=norm,
    )
    return Translator(Transformer(cfg), src, tgt, info={"max_src_tokens": 30})


@pytest.fixture(scope="module")
def translator() -> Translator:
    return _translator()


@pytest.fixture(scope="module")
def maps(translator: Translator) -> AttentionMaps:
    return translator.attention("the red cat is here today", "il gatto rosso è qui oggi")


def test_shapes_tokens_and_kinds(maps: AttentionMaps) -> None:
    s, t = len(maps.src_tokens), len(maps.tgt_tokens)
    assert maps.src_tokens[-1] == "<eos>" and maps.tgt_tokens[0] == "<bos>"
    assert maps.out_tokens[-1] == "<eos>" and maps.out_tokens[:-1] == maps.tgt_tokens[1:]
    assert tuple(maps.encoder.shape) == (2, 3, s, s)
    assert tuple(maps.decoder.shape) == (2, 3, t, t)
    assert tuple(maps.cross.shape) == (2, 3, t, s)
    assert maps.teacher_forced and maps.translation == "il gatto rosso è qui oggi"


def test_rows_sum_to_one_over_allowed_keys_and_masked_cells_are_zero(maps: AttentionMaps) -> None:
    for kind in KINDS:
        w, allowed = maps.weights(kind), maps.mask(kind)
        assert torch.all(w[..., ~allowed] == 0), kind
        rows = (w * allowed).sum(-1)
        has_keys = allowed.any(-1)
        torch.testing.assert_close(rows[..., has_keys], torch.ones_like(rows[..., has_keys]))


def test_causal_maps_are_exactly_lower_triangular(maps: AttentionMaps) -> None:
    t = maps.decoder.shape[-1]
    upper = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
    assert torch.equal(maps.decoder_mask, ~upper)
    assert torch.all(maps.decoder[..., upper] == 0)
    assert torch.all(maps.decoder[..., ~upper].sum() > 0)


def test_padding_columns_and_rows_are_zero(translator: Translator) -> None:
    model = translator.model
    pad = model.config.pad_id
    src = torch.tensor([[5, 6, 7, 2, pad, pad]])
    tgt = torch.tensor([[1, 8, 9, 10]])
    toks = [f"t{i}" for i in range(6)]
    m = collect_attention(
        model, src, tgt, src_tokens=toks, tgt_tokens=toks[:4], out_tokens=toks[:4]
    )
    assert not m.encoder_mask[:, 4:].any() and not m.cross_mask[:, 4:].any()
    assert torch.all(m.encoder[..., 4:] == 0) and torch.all(m.cross[..., 4:] == 0)
    assert torch.all(m.encoder[..., 4:, :] == 0)  # padded queries attend to nothing, no NaN
    assert not torch.isnan(m.encoder).any()


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_explained_weights_are_the_models_and_add_up_to_its_output(norm: str) -> None:
    translator = _translator(norm)
    maps = translator.attention("the old dog is there today", "il cane vecchio è lì")
    model = translator.model
    for kind in KINDS:
        for layer in range(2):
            for head in range(3):
                n_q = maps.weights(kind).shape[2]
                for token in (0, n_q // 2, n_q - 1):
                    ex = explain_head(maps, kind, layer, head, token)
                    torch.testing.assert_close(ex.weights, ex.model_weights, atol=1e-6, rtol=0)
                    assert ex.max_abs_difference < 1e-6
                    # the printed steps are consistent with each other
                    torch.testing.assert_close(ex.scaled, ex.scores / ex.d_head**0.5)
                    torch.testing.assert_close(ex.z, ex.weights @ ex.v)
    # Σ over heads of each head's share + the bias of W^O = the model's attention output.
    layer = model.decoder_layers[1].cross_attn
    captured: list[torch.Tensor] = []
    hook = layer.out_proj.register_forward_hook(lambda _m, _i, o: captured.append(o.detach()))
    src = torch.tensor([translator.encode_source("the old dog is there today")])
    tgt_ids = translator.tgt_tokenizer.encode("il cane vecchio è lì")
    with torch.no_grad():
        model(src, torch.tensor([[model.config.bos_id, *tgt_ids]]))
    hook.remove()
    token = 2
    total = sum(explain_head(maps, "cross", 1, h, token).projected for h in range(3))
    torch.testing.assert_close(
        total + layer.out_proj.bias, captured[0][0, token], atol=1e-5, rtol=0
    )


def test_explanation_text_shows_each_step(maps: AttentionMaps) -> None:
    text = explain_head(maps, "cross", 1, 2, 3).format()
    for step in ("q_i", "k_j", "q·k", "√d_head = √8", "α =", "z_i = Σ_j α_ij v_j", "W^O"):
        assert step in text, step
    masked = explain_head(maps, "decoder", 0, 0, 1).format()
    assert "masked" in masked and "−∞" in masked
    with pytest.raises(ValueError, match="head 3 is out of range"):
        explain_head(maps, "cross", 0, 3, 0)
    with pytest.raises(ValueError, match="token 99 is out of range"):
        explain_head(maps, "encoder", 0, 0, 99)


def test_translation_path_uses_the_models_own_output(translator: Translator) -> None:
    maps = translator.attention("the big house is here today", beam=2)
    assert not maps.teacher_forced
    (result,) = translator.translate(["the big house is here today"], search=search_config(2))
    assert maps.translation == result.text


def test_display_tokens_keep_word_boundaries() -> None:
    assert display_tokens(["▁L", "'", "▁archi", "tettura", "<eos>"]) == [
        "L",
        "'",
        "archi",
        "·tettura",
        "<eos>",
    ]
    assert display_tokens(["the", "cat", "."]) == ["the", "cat", "."]


def _not_blank(path: Path) -> None:
    import matplotlib.image as mpimg

    img = mpimg.imread(path)[..., :3]
    assert img.shape[0] > 200 and img.shape[1] > 200
    colours = np.unique((img * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 50, f"{path.name} looks blank ({len(colours)} colours)"
    assert img.std() > 0.05


def test_pngs_for_every_kind_are_written_and_not_blank(maps: AttentionMaps, tmp_path: Path) -> None:
    written = save_heatmaps(maps, tmp_path, layer=1, head=2)
    assert sorted(p.name for p in written) == sorted(
        f"{k}{s}.png" for k in KINDS for s in ("", "_grid")
    )
    for path in written:
        _not_blank(path)
    fig = plot_attention(maps, "cross")  # the average over layers and heads
    assert "average of all layers and heads" in fig.axes[0].get_title()
    with pytest.raises(ValueError, match="layer 5 is out of range"):
        plot_attention(maps, "encoder", layer=5)


def test_html_page_is_self_contained_and_carries_the_models_weights(maps: AttentionMaps) -> None:
    page = render_html(maps, explain=explanation_data(maps, "cross", 1, 0, 2))
    assert "<script src" not in page and "<link" not in page and "fetch(" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?https?:""", page)
    data = re.search(
        r'<script type="application/json" id="attention-data">(.*?)</script>', page, re.S
    )
    assert data is not None
    import json

    payload = json.loads(data.group(1))
    got = torch.tensor(payload["kinds"]["cross"]["weights"])
    torch.testing.assert_close(got, maps.cross, atol=1e-4, rtol=0)
    assert payload["explain"]["token"] == 2
    torch.testing.assert_close(
        torch.tensor(payload["explain"]["weights"]), maps.cross[1, 0], atol=1e-4, rtol=0
    )


def test_cli_attention_writes_everything_and_explains(
    translator: Translator, tmp_path: Path
) -> None:
    translator.save_pretrained(tmp_path / "m")
    out = tmp_path / "out"
    args = ["attention", "the red cat is here today", "--model", str(tmp_path / "m")]
    res = CliRunner().invoke(
        app, [*args, "--out", str(out), "--explain", "--layer", "1", "--head", "2", "--token", "1"]
    )
    assert res.exit_code == 0, res.output
    assert "cross attention, layer 1, head 2, query token 1" in res.output
    assert "α =" in res.output and "translation:" in res.output
    for name in ("attention.html", *(f"{k}{s}.png" for k in KINDS for s in ("", "_grid"))):
        assert (out / name).is_file(), name
    bad = CliRunner().invoke(app, [*args, "--out", str(out), "--explain", "--head", "7"])
    assert bad.exit_code == 2 and "head 7 is out of range" in bad.output
    assert "Traceback" not in bad.output
    bad = CliRunner().invoke(app, [*args, "--out", str(out), "--kind", "both"])
    assert bad.exit_code == 2 and "--kind" in bad.output


@pytest.mark.timeout(180)
def test_viewer_in_headless_chromium(maps: AttentionMaps, tmp_path: Path) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    page = save_html(
        maps, tmp_path / "attention.html", explain=explanation_data(maps, "cross", 1, 0, 2)
    )
    driver = chrome(800, 600)  # headless Chromium's default window
    try:
        driver.get(page.as_uri())
        body = driver.find_element(By.TAG_NAME, "body")
        assert body.get_attribute("data-selection") == "cross/1/0/lines"  # the explained head
        assert "cross-attention" in driver.find_element(By.ID, "status").text
        src_text = driver.find_element(By.ID, "source").text
        assert src_text == maps.source
        # one line per visible weight, queries and keys as text
        assert len(driver.find_elements(By.CSS_SELECTOR, "svg.lines text.qtok")) == len(
            maps.out_tokens
        )
        # switch kind and head
        driver.find_element(By.ID, "kind-decoder").click()
        Select(driver.find_element(By.ID, "head")).select_by_value("2")
        assert body.get_attribute("data-selection") == "decoder/1/2/lines"
        assert "head 2" in driver.find_element(By.ID, "status").text
        # hover a query token: only its lines stay, the focus line names its targets
        tokens = driver.find_elements(By.CSS_SELECTOR, "svg.lines text.qtok")
        ActionChains(driver).move_to_element(tokens[3]).perform()
        assert body.get_attribute("data-focus") == "q3"
        assert "attends to" in driver.find_element(By.ID, "focus").text
        shown = [
            ln
            for ln in driver.find_elements(By.CSS_SELECTOR, "svg.lines line")
            if ln.value_of_css_property("display") != "none"
        ]
        assert shown and all(ln.get_attribute("data-q") == "3" for ln in shown)
        # causal: a query never has a line to a later key
        assert all(int(ln.get_attribute("data-k")) <= 3 for ln in shown)
        # matrix view: masked cells are marked, hovering a row highlights it
        driver.find_element(By.ID, "view-matrix").click()
        t = len(maps.tgt_tokens)
        assert (
            len(driver.find_elements(By.CSS_SELECTOR, "table.matrix td.masked")) == t * (t - 1) // 2
        )
        row = driver.find_elements(By.CSS_SELECTOR, "table.matrix th.row")[4]
        ActionChains(driver).move_to_element(row).perform()
        assert (
            driver.find_elements(By.CSS_SELECTOR, "table.matrix tr.hot")[0].get_attribute("data-q")
            == "4"
        )
        # back to the explained head: the step-by-step table shows the model's weights
        driver.find_element(By.ID, "kind-cross").click()
        Select(driver.find_element(By.ID, "head")).select_by_value("0")
        alphas = [
            float(td.text)
            for td in driver.find_elements(By.CSS_SELECTOR, "#explain-table td.alpha")
        ]
        np.testing.assert_allclose(alphas, maps.cross[1, 0, 2].numpy(), atol=1e-4)
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == [], errors
    finally:
        driver.quit()


@pytest.mark.parametrize("precision", ["bf16", "int8"])
def test_explain_head_works_at_every_precision(precision: str) -> None:
    """The maps carry plain tensors (q/k/v, W^O dequantized), so the int8 model — whose
    out_proj has no float weight — is explained like the fp32 one, and matches itself."""
    from attenzione.model.fast.precision import for_inference

    base = _translator()
    fast = Translator(
        for_inference(base.model, precision),
        base.src_tokenizer,
        base.tgt_tokenizer,
        info={"max_src_tokens": 30},
    )
    maps = fast.attention("the old dog is there today", "il cane vecchio è lì")
    tol = 2e-2 if precision == "bf16" else 1e-5  # bf16 weights come back through bf16 math
    for kind in KINDS:
        ex = explain_head(maps, kind, 1, 2, 1)
        assert ex.max_abs_difference < tol, (kind, ex.max_abs_difference)
        assert ex.projected.shape == (20,) and torch.isfinite(ex.projected).all()


def test_maps_are_plain_data_and_masks_are_the_models(
    translator: Translator, maps: AttentionMaps
) -> None:
    """No live model inside; the masks drawn are the ones the model applied (masks.py's)."""
    from attenzione.model import masks as M

    assert not any(isinstance(v, torch.nn.Module) for v in vars(maps).values())
    src = torch.tensor([translator.encode_source("the red cat is here today")])
    tgt_ids = translator.tgt_tokenizer.encode("il gatto rosso è qui oggi")
    tgt = torch.tensor([[translator.model.config.bos_id, *tgt_ids]])
    assert torch.equal(maps.encoder_mask, M.pairwise_padding_mask(src, 0)[0, 0])
    assert torch.equal(maps.decoder_mask, M.decoder_self_mask(tgt, 0)[0, 0])
    assert torch.equal(maps.cross_mask, M.cross_mask(tgt, src, 0)[0, 0])
