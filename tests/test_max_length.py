"""``translate --max-length N``: at most N new tokens a sentence, whatever the source's length
(CTranslate2's max_decoding_length, transformers' max_new_tokens)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from attenzione.cli import app
from attenzione.translator.model_dir import PRETRAINED_DIR

pytestmark = pytest.mark.skipif(
    not (PRETRAINED_DIR / "model.safetensors").is_file(), reason="no shipped model in this checkout"
)
SENTENCE = "The cat is sleeping on the sofa in the living room."


def _translate(*options: str) -> str:
    result = CliRunner().invoke(app, ["translate", "--raw", "--beam", "1", *options, SENTENCE])
    assert result.exit_code == 0, result.output
    return result.stdout.strip()


def test_max_length_caps_the_new_tokens() -> None:
    from attenzione.translator import Translator

    tok = Translator.from_pretrained().tgt_tokenizer
    whole = _translate()
    assert len(tok.encode(whole)) > 4, whole
    for n in (1, 4):
        capped = _translate("--max-length", str(n))
        assert len(tok.encode(capped)) <= n, capped
        assert whole.startswith(capped), (whole, capped)  # greedy: the same first tokens
    # a cap longer than the translation changes nothing
    assert _translate("--max-length", "200") == whole


def test_a_max_length_below_one_is_one_line() -> None:
    result = CliRunner().invoke(app, ["translate", "--max-length", "0", "x"])
    assert result.exit_code == 2
    assert "--max-length must be >= 1" in result.output
