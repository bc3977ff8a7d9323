"""The decoding trace, the forced prefix and the ablations (issue 66, items 1–3 and 5) on both
shipped models: the trace is what ``translate`` does, recorded, not a second decoder."""

from __future__ import annotations

import pytest

from attenzione.config import search_config
from attenzione.translator.translator import PRETRAINED_DIR, Translator
from trace_checks import trace_is_translate

pytestmark = pytest.mark.skipif(
    not (PRETRAINED_DIR / "model.safetensors").is_file(), reason="no shipped model in this checkout"
)

SENTENCES = {
    "en-it": [
        "The transformer architecture was introduced in 2017.",
        "Where is the station?",
        "I have two cats and a dog.",
    ],
    "it-en": ["Dov'è la stazione?", "Ho due gatti e un cane."],
}


_LOADED: dict[int, str] = {}


@pytest.fixture(scope="module", params=["en-it", "it-en"])
def tr(request: pytest.FixtureRequest) -> Translator:
    path = PRETRAINED_DIR if request.param == "en-it" else PRETRAINED_DIR.parent / "it-en"
    if not (path / "model.safetensors").is_file():
        pytest.skip(f"no shipped {request.param} model")
    made = Translator.from_pretrained(path)
    _LOADED[id(made)] = request.param
    return made


def _sentences(tr: Translator) -> list[str]:
    return SENTENCES[_LOADED[id(tr)]]


@pytest.mark.parametrize("beam", [1, 4])
def test_the_trace_is_what_translate_writes(tr: Translator, beam: int) -> None:
    search = search_config(beam)
    for text in _sentences(tr):
        data = trace_is_translate(tr, text, search)
        assert data["steps"][-1]["chosen_id"] == tr.model.config.eos_id  # none is cut short
        if beam == 1:
            assert "beams" not in data
        else:
            statuses = {b["status"] for b in data["beams"]}
            assert {"kept", "finished"} <= statuses
            path = data["path"]
            assert len(path) == len(data["steps"])
            winner = data["beams"][path[-1]]
            assert winner["status"] == "finished"
            for step, (node, parent) in enumerate(zip(path, [None, *path[:-1]], strict=True)):
                assert data["beams"][node]["parent"] == parent
                assert data["beams"][node]["step"] == step
            # the winner's total log-prob is the sum of its pieces' log-probs at each step
            total = 0.0
            for s in data["steps"]:
                total += next(t["logprob"] for t in s["top"] if t["id"] == s["chosen_id"])
            assert winner["log_prob"] == pytest.approx(total, abs=1e-3)
        # each step's cross-attention row is a distribution over the source pieces
        n_src = len(data["attention"]["src_tokens"])
        for s in data["steps"]:
            for row in s["cross_attention"]:
                assert len(row) == n_src and sum(row) == pytest.approx(1.0, abs=1e-2)
            for row in s["self_attention"]:
                assert len(row) == s["step"] + 1


def test_a_forced_prefix_is_kept_and_the_models_own_start_changes_nothing(tr: Translator) -> None:
    text = _sentences(tr)[0]
    own = tr.translate(text)[0].text
    first_words = " ".join(own.split()[:2])
    assert tr.translate(text, prefix=first_words)[0].text == own
    trace = tr.trace(text, prefix=first_words)
    assert trace.translation == own
    forced = {"en-it": "Il", "it-en": "This"}[_LOADED[id(tr)]]
    assert not own.startswith(forced)
    other = tr.trace(text, prefix=forced)
    assert other.translation.startswith(forced)
    data = other.to_dict()
    n_forced = sum(s["forced"] for s in data["steps"])
    assert n_forced == len(tr.tgt_tokenizer.encode(forced))


def test_an_ablation_changes_the_output_and_none_changes_nothing(tr: Translator) -> None:
    text = _sentences(tr)[0]
    plain = tr.trace(text)
    assert tr.trace(text, ablate=[]).tokens == plain.tokens
    assert tr.trace(text, ablate="cross:*").tokens != plain.tokens
    assert tr.trace(text, ablate="positions").tokens != plain.tokens
    # and the model is itself again afterwards
    assert tr.trace(text).tokens == plain.tokens
    assert tr.trace(text, ablate="cross:*").ablate[0] == "cross:0.0"


def test_a_part_the_model_lacks_is_one_line_naming_what_it_has(tr: Translator) -> None:
    cfg = tr.model.config
    text = _sentences(tr)[0]
    cases = {
        f"cross:{cfg.n_dec_layers}.0": f"the model has no cross layer {cfg.n_dec_layers}: its "
        f"cross layers are 0..{cfg.n_dec_layers - 1}",
        f"encoder:0.{cfg.n_heads}": f"the model has no head {cfg.n_heads}: each attention layer "
        f"has heads 0..{cfg.n_heads - 1}",
        "heads:1": "cannot read the ablation 'heads:1': write KIND:LAYER.HEAD",
    }
    for spec, said in cases.items():
        with pytest.raises(ValueError) as caught:
            tr.trace(text, ablate=spec)
        assert str(caught.value).startswith(said) and "\n" not in str(caught.value)


def test_a_prefix_the_model_cannot_write_is_one_line(tr: Translator) -> None:
    text = _sentences(tr)[0]
    with pytest.raises(ValueError, match="cannot write"):
        tr.translate(text, prefix="\u4e2d\u6587\u5b57")
    with pytest.raises(ValueError, match="pieces; this model writes at most"):
        tr.trace(text, prefix="la " * tr.model.config.max_len)
    with pytest.raises(ValueError, match="pieces; a translation of this sentence has at most"):
        tr.translate(text, prefix="la " * 40)  # within the model's positions, past the cap
