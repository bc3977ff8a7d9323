"""Marian's tokenizer (OPUS-MT): the same ids and the same text as transformers' MarianTokenizer.

The fixture builds a Marian directory as Helsinki-NLP's look: two SentencePiece models trained
here (English source, Italian target) and a joint ``vocab.json`` with ``</s>`` 0, ``<unk>`` 1,
two language codes and ``<pad>`` last — and two pieces the models know left out of it, so
unknown pieces are exercised, not only unknown characters.
"""

from __future__ import annotations

import ast
import io
import json
import random
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

from attenzione.data.marian_tokenizer import SIDES, MarianVocabTokenizer
from attenzione.data.tokenizers import load_tokenizer

WORDS = {  # what the two SentencePiece models learn from (generated sentences of these)
    "en": "the cat dog house red blue big small is was has have and or of in on with 2017 42",
    "it": "il gatto cane casa rossa blu grande piccolo è era perché già città però più",
}
PUNCT = [".", ",", "!", "?", ";", ":", "'s", "(x)", "«a»"]
SENTENCES = [
    "",
    " ",
    "The cat is on the table.",
    "Il gatto è sul tavolo.",
    "Perché la città è già più grande?",
    "L'architettura è stata introdotta nel 2017.",
    "Dov'è la stazione? «Lì», disse.",
    "I don't know Tom's car!",
    "3,14 + 2.5 = 5.64; 1000000 people.",
    "1984 2017 42 007",
    "Numbers: 1st, 2nd, 3rd — and 4th…",
    "x² and ½ and ＡＢＣ are normalised",
    "cafe\u0301 and café",
    "non\u00a0breaking\u2009spaces",
    "tabs\tand\nnewlines",
    "   leading and trailing   ",
    "UPPER CASE WORDS",
    "a snowman ☃ and 漢字 and 🙂 emoji",
    "Ωμέγα and Привет",
    "€ 5, £ 3, ¥ 100, $ 7",
    'quotes “curly” ‘single’ "straight"',
    "<unk> written in the text",
    "a </s> in the middle",
    "<pad>glued<pad>",
    "</s></s>",
    "<s> is not special here",
    ">>ita<< The cat is red.",
    ">>fra<< Il gatto",
    ">>xyz<< an unknown code",
    ">>ita<<",
    ">>ita<<>>fra<< twice",
    ">> no close",
    "x >>ita<< not at the start",
    " >>ita<< a space first",
    "</s>>>ita<< after a special",
    "<<ita>> backwards",
    "the the the the the the the the",
    "qwzx jjjj kkkk unknown letters",
    "ÀÈÌÒÙ àèìòù",
    "Ich möchte Käse.",
    "hyphen-ated e-mail well-known",
    "a.b.c d/e/f g_h",
    "!!!???...",
    "(((nested)))",
    "@user #hashtag https://example.com/x?y=1",
    "il gatto rosso ha 3 case grandi.",
    "the big red dog has 42 small houses",
    "perché però più già",
    "È È è",
    "\u200bzero width",
]


def _sentences(language: str, n: int, seed: int) -> list[str]:
    rng, words = random.Random(seed), WORDS[language].split()
    out = []
    for _ in range(n):
        ws = [rng.choice(words) for _ in range(rng.randint(3, 10))]
        out.append(" ".join(ws).capitalize() + rng.choice(PUNCT))
    return out


def _train_spm(texts: list[str], vocab_size: int) -> bytes:
    import sentencepiece as spm

    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(  # Marian's layout: <unk> 0, <s> 1, </s> 2, no <pad>
        sentence_iterator=iter(texts),
        model_writer=buffer,
        vocab_size=vocab_size,
        hard_vocab_limit=False,
        character_coverage=0.98,  # rare characters stay out: unknown characters
        num_threads=1,
        minloglevel=2,
    )
    return buffer.getvalue()


def _pieces(proto: bytes) -> list[str]:
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_proto=proto)
    return [sp.id_to_piece(i) for i in range(sp.get_piece_size()) if not sp.is_control(i)]


def write_marian_dir(directory: Path, *, pad: bool = True) -> dict[str, Any]:
    """A Hugging Face Marian directory; returns what it left out of the vocabulary."""
    directory.mkdir(parents=True, exist_ok=True)
    src = _train_spm(_sentences("en", 300, 1) + ["Ωμέγα"], 70)
    tgt = _train_spm(_sentences("it", 300, 2), 70)
    (directory / "source.spm").write_bytes(src)
    (directory / "target.spm").write_bytes(tgt)
    # one piece each side knows, left out of the table (a multi-letter one, so it occurs)
    dropped = [next(p for p in _pieces(m) if len(p) > 3 and p[0] == "▁") for m in (src, tgt)]
    vocab: dict[str, int] = {"</s>": 0, "<unk>": 1, ">>ita<<": 2, ">>fra<<": 3}
    for piece in _pieces(src) + _pieces(tgt):
        if piece not in vocab and piece not in dropped:
            vocab[piece] = len(vocab)
    if pad:
        vocab["<pad>"] = len(vocab)
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), "utf-8")
    config = {"source_lang": "en", "target_lang": "it", "separate_vocabs": False}
    (directory / "tokenizer_config.json").write_text(json.dumps(config), "utf-8")
    return {"dropped": dropped, "vocab": vocab}


@pytest.fixture(scope="module")
def marian(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    d = tmp_path_factory.mktemp("opus-mt-en-it")
    return d, write_marian_dir(d)


def _hf(directory: Path) -> Any:
    transformers = pytest.importorskip("transformers")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Recommended: pip install sacremoses."
        return transformers.MarianTokenizer.from_pretrained(str(directory))


def _assert_same(
    hf: Any, src: MarianVocabTokenizer, tgt: MarianVocabTokenizer, extra: tuple[str, ...] = ()
) -> None:
    """Equal ids both sides (transformers appends </s>, our encode leaves it to the caller),
    equal pieces, equal text decoded from both sides' ids."""
    assert (src.eos_id, src.unk_id, src.pad_id) == (
        hf.eos_token_id,
        hf.unk_token_id,
        hf.pad_token_id,
    )
    for s in [*SENTENCES, *extra]:
        ids = hf(s)["input_ids"]
        assert src.encode(s) + [src.eos_id] == ids, s
        assert src.pieces(s) == hf.tokenize(s), s
        tgt_ids = hf(text_target=s)["input_ids"]
        assert tgt.encode(s) + [tgt.eos_id] == tgt_ids, s
        theirs = hf.decode(tgt_ids, skip_special_tokens=True, use_source_tokenizer=False)
        assert tgt.decode(tgt_ids) == theirs, s
        theirs = hf.decode(ids, skip_special_tokens=True, use_source_tokenizer=True)
        assert src.decode(ids) == theirs, s
    assert src.encode_batch(SENTENCES) == [hf(s)["input_ids"][:-1] for s in SENTENCES]


def test_ids_and_text_equal_transformers(marian: tuple[Path, dict[str, Any]]) -> None:
    d, made = marian
    hf = _hf(d)
    src = MarianVocabTokenizer.from_hf_dir(d, side="source")
    tgt = MarianVocabTokenizer.from_hf_dir(d, "target")
    dropped = [piece.replace("▁", " ").strip() for piece in made["dropped"]]
    _assert_same(hf, src, tgt, tuple(dropped))
    # the unknowns really happened: unknown characters and known pieces missing from the table
    unknown = [s for s in SENTENCES if src.unk_id in src.encode(s) + tgt.encode(s)]
    assert "a snowman ☃ and 漢字 and 🙂 emoji" in unknown
    for tok, piece, text in zip((src, tgt), made["dropped"], dropped, strict=True):
        pieces = tok.pieces(text)
        assert piece in pieces and tok.encode(text)[pieces.index(piece)] == tok.unk_id
    # the language code is one token, the rest of the text encoded as usual
    assert src.encode(">>ita<< The cat")[0] == made["vocab"][">>ita<<"]
    assert src.encode(">>ita<< The cat")[1:] == src.encode("The cat")
    assert src.language_codes == [">>ita<<", ">>fra<<"]


def test_any_ids_decode_and_name_pieces_as_transformers(
    marian: tuple[Path, dict[str, Any]],
) -> None:
    """Ids the model may write in any order — source-only pieces, specials, unknowns — decode
    to transformers' text on each side, and every id names transformers' piece."""
    d, _ = marian
    hf = _hf(d)
    src = MarianVocabTokenizer.from_hf_dir(d, side="source")
    tgt = MarianVocabTokenizer.from_hf_dir(d, side="target")
    assert src.vocab_size == tgt.vocab_size == len(hf)
    ids = list(range(src.vocab_size))
    assert [tgt.id_to_token(i) for i in ids] == hf.convert_ids_to_tokens(ids)
    rng = random.Random(0)
    for _ in range(200):
        seq = [rng.randrange(src.vocab_size) for _ in range(rng.randint(0, 12))]
        for tok, use_source in ((tgt, False), (src, True)):
            theirs = hf.decode(seq, skip_special_tokens=True, use_source_tokenizer=use_source)
            assert tok.decode(seq) == theirs, seq


def test_a_directory_transformers_saved_reads_the_same(
    marian: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """save_pretrained writes added_tokens_decoder and special_tokens_map: same tokenizer."""
    hf = _hf(marian[0])
    hf.save_pretrained(str(tmp_path))
    src = MarianVocabTokenizer.from_hf_dir(tmp_path, side="source")
    tgt = MarianVocabTokenizer.from_hf_dir(tmp_path, side="target")
    _assert_same(_hf(tmp_path), src, tgt)


def test_a_vocabulary_without_pad_gets_it_appended_as_transformers_does(tmp_path: Path) -> None:
    write_marian_dir(tmp_path, pad=False)
    hf = _hf(tmp_path)
    src = MarianVocabTokenizer.from_hf_dir(tmp_path)
    tgt = MarianVocabTokenizer.from_hf_dir(tmp_path, side="target")
    assert src.pad_id == src.vocab_size - 1 == hf.pad_token_id
    _assert_same(hf, src, tgt)


def test_save_and_load_tokenizer_round_trip(
    marian: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """A model directory's tokenizer folder: tokenizer.json, the side's .spm and vocab.json —
    loaded back through load_tokenizer alone, the Marian directory gone."""
    d, made = marian
    copy = tmp_path / "hf"
    shutil.copytree(d, copy)
    toks = {side: MarianVocabTokenizer.from_hf_dir(copy, side=side) for side in SIDES}
    for side, tok in toks.items():
        tok.save(tmp_path / side)
    shutil.rmtree(copy)
    for side, tok in toks.items():
        out = tmp_path / side
        assert sorted(p.name for p in out.iterdir()) == sorted(
            ["tokenizer.json", f"{side}.spm", "vocab.json"]
        )
        back = load_tokenizer(out)
        assert isinstance(back, MarianVocabTokenizer) and back.side == side
        pad = made["vocab"]["<pad>"]
        assert (back.pad_id, back.eos_id, back.unk_id) == (pad, 0, 1)
        # Marian's decoder starts from <pad>; no <bos>: the name goes to <unk>
        assert (back.decoder_start_id, back.bos_id) == (pad, 1)
        assert back.vocab_size == tok.vocab_size == len(made["vocab"])
        assert back.encode_batch(SENTENCES) == tok.encode_batch(SENTENCES)
        for s in SENTENCES:
            ids = tok.encode(s) + [tok.eos_id]
            assert back.decode(ids) == tok.decode(ids)
        assert [back.id_to_token(i) for i in range(40)] == [tok.id_to_token(i) for i in range(40)]


def test_marian_tokenizer_basics_without_transformers(
    marian: tuple[Path, dict[str, Any]],
) -> None:
    d, made = marian
    tok = MarianVocabTokenizer.from_hf_dir(d, side="target")
    assert tok.encode("") == [] and tok.decode([]) == ""
    ids = tok.encode("il gatto è grande")
    assert tok.eos_id not in ids and tok.decode([*ids, tok.eos_id, tok.pad_id]) == (
        "il gatto è grande"
    )
    assert tok.encode("a </s> b").count(tok.eos_id) == 1  # written out, still one token
    assert tok.id_to_token(tok.pad_id) == "<pad>" and tok.id_to_token(10**6) == "<unk>"
    with pytest.raises(ValueError, match="subword sampling"):
        tok.sample_batch(["x"], alpha=0.5, seed=0)


def test_damaged_or_hostile_directories_are_value_errors(
    marian: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    d, _ = marian
    with pytest.raises(ValueError, match="side"):
        MarianVocabTokenizer.from_hf_dir(d, side="both")
    with pytest.raises(FileNotFoundError, match="not a Marian tokenizer directory"):
        MarianVocabTokenizer.from_hf_dir(tmp_path)
    out = MarianVocabTokenizer.from_hf_dir(d).save(tmp_path / "tok")
    config = json.loads((out / "tokenizer.json").read_text())
    (out / "tokenizer.json").write_text(json.dumps({**config, "vocab": "../vocab.json"}))
    with pytest.raises(ValueError, match="file name"):
        load_tokenizer(out)
    (out / "tokenizer.json").write_text(json.dumps(config))
    (out / "vocab.json").write_text('{"</s>": 0, "<pad>": 2}')
    with pytest.raises(ValueError, match="unknown token '<unk>'"):
        load_tokenizer(out)
    (out / "vocab.json").write_text('{"</s>": "zero"')
    with pytest.raises(ValueError, match="not valid JSON"):
        load_tokenizer(out)
    (out / "vocab.json").write_text('{"</s>": -1, "<unk>": 1}')
    with pytest.raises(ValueError, match="ids >= 0"):
        load_tokenizer(out)


def test_the_module_never_imports_transformers() -> None:
    """transformers is a test dependency: the tokenizer reads the files itself."""
    import attenzione.data.marian_tokenizer as module

    tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    }
    assert "transformers" not in imported and "sentencepiece" in imported
