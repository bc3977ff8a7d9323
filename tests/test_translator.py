"""Translator: loading, saving, the input policy, the CLI's errors, and the shipped model."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from attenzione.cli import app
from attenzione.config import DecodeConfig, ModelConfig
from attenzione.data import SentencePieceTokenizer, WordTokenizer
from attenzione.markup import Tag, inline_pairs
from attenzione.model import Transformer
from attenzione.translator import MARKUP_TAG, PRETRAINED_DIR, Translator

SENTENCES = [
    f"the {a} {n} is {v} today"
    for a in ("red", "old", "big")
    for n in ("cat", "dog", "house")
    for v in ("here", "there")
]


def _tiny_config(src_vocab: int, tgt_vocab: int, *, max_len: int) -> ModelConfig:
    """d_model 16, 2 heads, one layer each side: untrained, for I/O and policy tests."""
    return ModelConfig(
        src_vocab_size=src_vocab,
        tgt_vocab_size=tgt_vocab,
        d_model=16,
        n_heads=2,
        d_head=8,
        d_ff=32,
        n_enc_layers=1,
        n_dec_layers=1,
        dropout=0.0,
        max_len=max_len,
    )


@pytest.fixture(scope="module")
def translator() -> Translator:
    torch.manual_seed(0)
    src = WordTokenizer.train(SENTENCES)
    tgt = SentencePieceTokenizer.train(
        [s.replace("the", "il") for s in SENTENCES] * 3, vocab_size=24
    )
    cfg = _tiny_config(src.vocab_size, tgt.vocab_size, max_len=32)
    return Translator(Transformer(cfg), src, tgt, info={"max_src_tokens": 12})


def test_empty_and_whitespace_lines_give_empty_lines(translator: Translator) -> None:
    out = translator.translate(["", "   ", "the cat is here", "\t"], beam=2)
    assert out[0] == out[1] == out[3] == ""
    assert len(out) == 4


def test_long_input_is_split_into_sentences_and_pieces(translator: Translator) -> None:
    long = "the red cat is here. " * 6 + "the " + "old dog " * 20
    pieces = translator._pieces(long.strip())
    assert len(pieces) > 6
    for piece in pieces:
        assert len(translator.encode_source(piece)) <= translator.max_src_tokens
    # Nothing dropped: every word of the input is in exactly one piece, in order.
    assert " ".join(pieces).split() == long.split()
    assert len(translator.translate([long], beam=1)) == 1


def test_batch_results_come_back_in_input_order(translator: Translator) -> None:
    texts = ["the cat is here today", "the big dog", "the old house is there", "cat"]
    together = translator.translate(texts, beam=1, batch_size=2)
    alone = [translator.translate(t, beam=1)[0] for t in texts]
    assert together == alone


def test_save_and_load_give_identical_translations(translator: Translator, tmp_path: Path) -> None:
    translator.save_pretrained(tmp_path / "m")
    again = Translator.from_pretrained(tmp_path / "m")
    texts = ["the red cat is here", "the dog is there today"]
    assert again.translate(texts, beam=3) == translator.translate(texts, beam=3)
    half = tmp_path / "half"
    translator.save_pretrained(half, dtype=torch.float16)
    assert (half / "model.safetensors").stat().st_size < (
        tmp_path / "m" / "model.safetensors"
    ).stat().st_size


def test_n_best_lists_distinct_hypotheses(translator: Translator) -> None:
    hyps = translator.translate_n_best("the red cat is here", beam=4, n_best=3)
    assert 1 <= len(hyps) <= 3
    assert [s for _, s in hyps] == sorted((s for _, s in hyps), reverse=True)


def test_sampling_is_reproducible_with_a_seed(translator: Translator) -> None:
    a = translator.translate(["the cat is here"] * 3, sample=True, seed=5, temperature=2.0)
    b = translator.translate(["the cat is here"] * 3, sample=True, seed=5, temperature=2.0)
    assert a == b


def test_missing_model_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        Translator.from_pretrained(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="config.json"):
        Translator.from_pretrained(tmp_path / "empty")


def test_cli_translate_errors_are_one_line(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["translate", "--model", str(tmp_path / "nope"), "hello"])
    assert res.exit_code == 2
    assert "does not exist" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["translate", "--input", str(tmp_path / "missing.txt")])
    assert res.exit_code == 2 and "missing.txt" in res.output


def test_cli_translate_file_to_file(translator: Translator, tmp_path: Path) -> None:
    translator.save_pretrained(tmp_path / "m")
    src = tmp_path / "in.txt"
    src.write_text("the red cat is here\n\nthe dog is there\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    res = CliRunner().invoke(
        app,
        [
            "translate",
            "--model",
            str(tmp_path / "m"),
            "-i",
            str(src),
            "-o",
            str(out),
            "--beam",
            "2",
        ],
    )
    assert res.exit_code == 0, res.output
    lines = out.read_text(encoding="utf-8").split("\n")
    assert len(lines) == 4 and lines[1] == "" and lines[3] == ""


def test_cli_translate_keeps_a_windows_files_line_ends_and_ignores_its_bom(
    translator: Translator, tmp_path: Path
) -> None:
    # Notepad writes UTF-8 with a byte-order mark and CRLF: the mark was read as part of the
    # first sentence ("\ufeffHello." → "La barra degli strumenti disprezzo." with the shipped
    # model, "Hello." → "Pronto.") and the translations came back with LF
    assert translator.encode_source("\ufeffthe red cat") == translator.encode_source("the red cat")
    translator.save_pretrained(tmp_path / "m")
    outputs = {}
    for name, data in (
        ("windows", b"\xef\xbb\xbfthe red cat is here\r\n\r\nthe dog is there\r\n"),
        ("unix", b"the red cat is here\n\nthe dog is there\n"),
    ):
        src, out = tmp_path / f"{name}.txt", tmp_path / f"{name}.out"
        src.write_bytes(data)
        args = ["translate", "--model", str(tmp_path / "m"), "-i", str(src), "-o", str(out)]
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.output
        outputs[name] = out.read_bytes()
    assert outputs["windows"].count(b"\r\n") == 3
    assert outputs["windows"].replace(b"\r\n", b"\n") == outputs["unix"]
    assert b"\r" not in outputs["unix"]


shipped = pytest.mark.skipif(
    not (PRETRAINED_DIR / "model.safetensors").is_file(), reason="no shipped model in this checkout"
)


@shipped
def test_shipped_model_translates_three_sentences() -> None:
    tr = Translator.from_pretrained()
    out = tr.translate(
        ["Where is the train station?", "I love you.", "The cat is sleeping on the sofa."]
    )
    assert len(out) == 3 and all(o.strip() for o in out)
    assert "stazione" in out[0].lower()
    # "you" is ambiguous in English: ti (tu), vi (voi) and la (Lei) amo are all correct
    assert re.search(r"\b(ti|vi|la|le) amo\b", out[1].lower()), out[1]
    assert "gatto" in out[2].lower()
    assert "Tatoeba" in tr.info.get("attribution", "")


def test_precisions_load_and_translate(translator: Translator, tmp_path: Path) -> None:
    translator.save_pretrained(tmp_path / "m")
    for precision in ("bf16", "int8"):
        fast = Translator.from_pretrained(tmp_path / "m", precision=precision)
        out = fast.translate(["the red cat is here", ""], beam=2)
        assert len(out) == 2 and out[1] == ""
    res = CliRunner().invoke(
        app, ["translate", "--model", str(tmp_path / "m"), "--precision", "fp8", "hello"]
    )
    assert res.exit_code == 2 and "precision must be one of" in res.output


def test_translate_iter_streams_in_input_order(translator: Translator) -> None:
    """Output arrives chunk by chunk, before the input is exhausted, in input order."""
    texts = ["the cat is here today", "", "the big dog", "the old house is there", "cat"] * 3
    consumed: list[int] = []

    def lines() -> Iterator[str]:
        for i, t in enumerate(texts):
            consumed.append(i)
            yield t

    stream = translator.translate_iter(lines(), batch_size=2, chunk=4)
    first = next(stream)
    assert len(consumed) <= 5  # one chunk (and the look-ahead that ends it), not all 15
    rest = list(stream)
    assert [first, *rest] == translator.translate(texts, beam=4, batch_size=2)


def test_translate_rejects_a_bad_batch_size(translator: Translator) -> None:
    for size in (0, -1):
        with pytest.raises(ValueError, match="batch_size must be >= 1"):
            translator.translate(["the cat"], batch_size=size)


def test_attention_refuses_a_sentence_longer_than_the_model_reads(translator: Translator) -> None:
    """It used to cut the source (and its <eos>), showing an input translate() never sees."""
    long = "the old dog " * 10
    assert len(translator.encode_source(long)) > translator.max_src_tokens
    with pytest.raises(ValueError, match="reads at most"):
        translator.attention(long)


def test_cli_output_file_is_written_as_it_goes(translator: Translator, tmp_path: Path) -> None:
    translator.save_pretrained(tmp_path / "m")
    src = tmp_path / "in.txt"
    texts = ["the cat is here today", "", "the big dog"] * 3
    src.write_text("\n".join(texts) + "\n")
    out = tmp_path / "out.txt"
    res = CliRunner().invoke(
        app, ["translate", "--model", str(tmp_path / "m"), "-i", str(src), "-o", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert out.read_text().splitlines() == translator.translate(texts)
    assert f"wrote 9 translations to {out}" in res.output


@shipped
def test_shipped_model_keeps_the_numbers_of_a_sentence() -> None:
    from attenzione.evaluation import number_fidelity

    tr = Translator.from_pretrained()
    sources = [
        "The transformer architecture was introduced in 2017.",
        "I was born in 1990.",
        "Call me at 555-1234.",
        "Tom has 37 cats and 12 dogs.",
    ]
    out = tr.translate(sources)
    fid = number_fidelity(sources, out)
    assert (fid.kept, fid.total) == (5, 5), out
    raw = tr.translate(sources, fix_numbers=False)
    # the repair only ever touches numbers: the words of each translation are the model's own
    strip = str.maketrans("", "", "0123456789-")
    assert [r.translate(strip) for r in raw] == [o.translate(strip) for o in out]


@shipped
def test_shipped_model_keeps_the_commas_of_its_source() -> None:
    # without punctuation coverage the likeliest translations drop a comma the source has
    tr = Translator.from_pretrained()
    sources = [
        "In 1990, the company moved to Paris.",
        "In the summer, many tourists visit the island.",
        "However, the plan was never carried out.",
    ]
    kept = tr.translate(sources)
    assert [t.count(",") for t in kept] == [s.count(",") for s in sources], kept
    dropped = tr.translate(sources, punctuation_coverage=0)
    assert all(d.count(",") < s.count(",") for s, d in zip(sources, dropped, strict=True)), dropped
    # only the ranking changed: each kept translation is the other with its commas
    assert [k.replace(",", "") for k in kept] == [d.replace(",", "") for d in dropped]
    # what is owed: "5,000"'s comma is the number's; "3 (4)" has its brackets ("▁(" follows a
    # digit piece, but after a space)
    from attenzione.translator import DIGITS

    text = "Scores were 3 (4), then 5,000."
    ids = torch.tensor([tr.encode_source(text)])
    need = tr._coverage(ids, DecodeConfig()).need[0].tolist()
    owed = dict(zip(DIGITS + tr._marks, need, strict=True))
    assert (owed[","], owed["("], owed[")"], owed["0"], owed["5"]) == (1, 1, 1, 3, 1)


@shipped
def test_attention_coverage_adds_what_a_teacher_forced_pass_attends() -> None:
    # beam search sums the middle decoder layer's attention step by step, through the cache
    # and the beams' reordering; the same hypothesis read again in one teacher-forced pass
    # must give the same coverage, and its ranking score must move by exactly that much
    tr = Translator.from_pretrained()
    ids = tr.encode_source("The attack put a huge strain on relations between the two countries.")
    on, off = (DecodeConfig(beam_size=4, n_best=4, attention_coverage=b) for b in (1.0, 0.0))
    with_cover = {tuple(h.tokens): h for h in tr.translate_ids([ids], on)[0]}
    without = {tuple(h.tokens): h for h in tr.translate_ids([ids], off)[0]}
    common = set(with_cover) & set(without)
    assert common
    cfg = tr.model.config
    src = torch.tensor([ids])
    real = (src != cfg.pad_id) & (src != cfg.eos_id)
    for tokens in common:
        tgt = torch.tensor([[cfg.bos_id, *tokens]])
        with torch.inference_mode():
            att = tr.model(src, tgt, need_weights=True).cross_attentions[tr.attention_layer]
        received = att[0].mean(dim=0).sum(dim=0)  # (S,): every position, <eos>'s included
        cover = float((received.clamp(min=1e-6, max=1.0).log() * real[0]).sum())
        assert cover < 0  # this sentence leaves some token short of a whole step's attention
        gap = with_cover[tokens].score - without[tokens].score
        assert gap == pytest.approx(cover, abs=1e-3)
        assert with_cover[tokens].log_prob == pytest.approx(without[tokens].log_prob, abs=1e-5)


@shipped
def test_shipped_model_writes_a_character_it_spells_in_bytes_whole() -> None:
    # "£" is not in the vocabulary: bytes <0xC2><0xA3>; the model, left alone, follows the
    # lead byte with a word piece here ("costa � Put5.", "di �~27 milioni.")
    tr = Translator.from_pretrained()
    sentences = [
        "A ticket costs £5.",
        "Jesus joined Manchester City in January 2017 from Brazilian club Palmeiras for a "
        "reported fee of £27 million.",
    ]
    for out in tr.translate(sentences) + tr.translate(sentences, beam=1, fix_numbers=False):
        assert "\ufffd" not in out and "£" in out, out


@shipped
def test_shipped_model_keeps_names_whose_letters_it_spells_in_bytes() -> None:
    # the model read "ń" and "ğ" as bytes and wrote "Gda sbottoNato" and "L'Argento"; it
    # reads them as base letters and the names are written back as the source has them
    import unicodedata

    tr = Translator.from_pretrained()
    lines = ["I visited Gdańsk last year.", "Erdoğan spoke in Ankara.", "I live in Łódź."]
    lines += ["I LIVE IN ŁÓDŹ.", "Gdańsk and GDAŃSK are the same city."]
    lines.append(unicodedata.normalize("NFD", "I live in Gdańsk and Łódź."))
    out = tr.translate(lines)
    assert "Gdańsk" in out[0] and "Erdoğan" in out[1] and "Łódź" in out[2], out
    assert "ŁÓDŹ" in out[3], out  # a capitals line reads the name as a name: "Łódź"
    assert "Gdańsk" in out[4] and "GDAŃSK" in out[4], out  # each as the source wrote it
    assert "Gdańsk" in out[5] and "Łódź" in out[5], out  # decomposed letters read as one
    # the attention viewer reads it as translate() does
    assert tr.attention("I visited Gdańsk last year.").translation == out[0]
    read, swaps = tr._fold("Erdoğan met Dončić and Doncic in Kraków, Plzeň; à la carte, no.")
    # "Doncic" is a word of the source: "Dončić" keeps its bytes; "à" is in the vocabulary;
    # "ó" is Latin-1, which the model copies in bytes ("Kraków" is kept as it is)
    assert read == "Erdogan met Dončić and Doncic in Kraków, Plzen; à la carte, no."
    assert dict(swaps) == {"Erdogan": "Erdoğan", "Plzen": "Plzeň"}
    # the user's own ASCII spelling anywhere in the text, in any case, keeps the bytes: the
    # write-back would rewrite it ("lodz.pl" → "Łódź.pl")
    for text in ("Visit lodz.pl about Łódź.", "Mail erdogan@x.org on Erdoğan.", "ŁÓDŹ (LODZ)"):
        assert tr._fold(text) == (text, ()), text
    assert tr._fold("Łodz and Lódź") == ("Łodz and Lódź", ())  # two words read alike


def test_a_word_read_with_base_letters_is_written_back_whole() -> None:
    from attenzione.translator import _base_letter, _unfolded

    assert [_base_letter(c) for c in "ńğłŁđıřș€"] == [*"nglLdirs", None]
    swaps = (("Gdansk", "Gdańsk"),)
    assert _unfolded("Da Gdansk a Gdansky, gdansk.", swaps) == "Da Gdańsk a Gdansky, Gdańsk."
    both = (("GDANSK", "GDAŃSK"), ("Gdansk", "Gdańsk"))  # one name in two cases
    assert _unfolded("Gdansk e GDANSK, gdansk", both) == "Gdańsk e GDAŃSK, GDAŃSK"


@shipped
def test_short_words_and_known_readings_keep_their_bytes(translator: Translator) -> None:
    from attenzione.translator import FOLD_MIN_LETTERS

    tr = Translator.from_pretrained()
    assert FOLD_MIN_LETTERS == 3 and tr._spelled_in_bytes("ł")
    assert tr._fold("Łó and Łódź") == ("Łó and Lodz", (("Lodz", "Łódź"),))  # "Łó" is short
    # a reading that is a known word of the targets would come back as that word, and one
    # the training data always translates would be translated ("Sąd" → "Sad")
    assert tr._spelled_in_bytes("ă") and "casa" in (tr.known_words or ())
    assert tr._fold("Căsa Blăsk") == ("Căsa Blask", (("Blask", "Blăsk"),))
    assert "sad" in (tr.translated_words or ()) and tr._fold("The Sąd ruled.")[1] == ()
    # a vocabulary without byte pieces has nothing spelled in bytes: nothing is folded
    assert translator._fold("Gdańsk") == ("Gdańsk", ())


@shipped
def test_shipped_model_spells_in_bytes_only_the_characters_of_its_source() -> None:
    # "№" (E2 84 96) is spelled in bytes; with well-formed UTF-8 and the source's bytes as
    # the only checks, the model wrote "℄" (E2 84 84) instead: a character the source never had
    tr = Translator.from_pretrained()
    out = tr.translate("Invoice № 42 is paid.")[0]
    assert "№" in out and "℄" not in out, out


@shipped
def test_shipped_model_beam_search_writes_the_time_and_greedy_still_ends() -> None:
    tr = Translator.from_pretrained()
    sentence = "Tom didn't come back until after 2:30."
    # the model's own digits (no repair): beam search with the number coverage keeps them
    assert "2:30" in tr.translate(sentence, fix_numbers=False)[0]
    # greedy decoding ignores the coverage (one hypothesis, nothing to choose between) and
    # ends its sentence where the model does, whatever it wrote for the time
    greedy = tr.translate(sentence, beam=1, fix_numbers=False)[0]
    assert greedy == tr.translate(sentence, beam=1, fix_numbers=False, number_coverage=0)[0]
    assert greedy.endswith(".") and len(greedy) < 2 * len(sentence), greedy


@shipped
def test_cli_translate_fix_numbers_flag_gives_the_repaired_or_the_raw_output() -> None:
    tr = Translator.from_pretrained()
    sentence = "I was born in 2017."
    for flag, fix in (("--fix-numbers", True), ("--no-fix-numbers", False)):
        res = CliRunner().invoke(app, ["translate", "--beam", "1", flag, sentence])
        assert res.exit_code == 0, res.output
        expected = tr.translate(sentence, beam=1, fix_numbers=fix)[0]
        assert res.output.strip() == expected
    assert "2017" in tr.translate(sentence, beam=1)[0]


def test_byte_pieces_are_produced_only_to_copy_the_source() -> None:
    """With byte fallback, an untrained model sampling at random would spell stray bytes
    ("�"); the output may hold byte pieces only where the source had them."""
    torch.manual_seed(0)
    tok = SentencePieceTokenizer.train(
        [s + " e il gatto" for s in SENTENCES] * 3, vocab_size=284, byte_fallback=True
    )
    tr = Translator(Transformer(_tiny_config(tok.vocab_size, tok.vocab_size, max_len=64)), tok, tok)
    byte_ids = {i for i in range(tok.vocab_size) if tok.id_to_token(i).startswith("<0x")}
    assert len(byte_ids) == 256
    source = "the red cat is here, Dvořák"  # letters the vocabulary lacks: byte pieces
    allowed = byte_ids & set(tok.encode(source))
    assert 2 <= len(allowed) < 20
    for decode in (
        DecodeConfig(method="sample", seed=1, n_best=1, max_len_a=0, max_len_b=40),
        DecodeConfig(method="beam", beam_size=4, n_best=4, max_len_a=0, max_len_b=40),
    ):
        outputs = tr.translate_ids(
            [tr.encode_source(source), tr.encode_source("the old dog is there")], decode
        )
        with_bytes, without = ({t for h in hyps for t in h.tokens} for hyps in outputs)
        assert with_bytes & byte_ids <= allowed and not without & byte_ids
    # without the ban the same sampling does produce stray bytes: the check above can fail
    tr._byte_src = tr._byte_tgt = torch.empty(0, dtype=torch.long)
    stray = tr.translate_ids(
        [tr.encode_source("the old dog is there")],
        DecodeConfig(method="sample", seed=1, n_best=1, max_len_a=0, max_len_b=40),
    )
    assert {t for h in stray[0] for t in h.tokens} & byte_ids


@shipped
def test_shipped_model_translates_real_text_and_greetings() -> None:
    tr = Translator.from_pretrained()
    arch, hello = tr.translate(["The transformer architecture was introduced in 2017.", "Hello."])
    assert "architettura" in arch.lower() and "2017" in arch, arch
    assert re.search(r"\b(ciao|salve|buongiorno|buonasera|pronto)\b", hello.lower()), hello
    # the numbers come out of the model itself, not only out of the repair after it
    raw = tr.translate("The transformer architecture was introduced in 2017.", fix_numbers=False)
    assert "2017" in raw[0], raw


@shipped
def test_shipped_tokenizer_round_trips_anything_without_unk() -> None:
    from test_tokenizers import ROUND_TRIP

    tok = Translator.from_pretrained().src_tokenizer
    for text in ROUND_TRIP:
        ids = tok.encode(text)
        assert tok.unk_id not in ids, text
        assert tok.decode(ids) == text
    pieces = [tok.id_to_token(i) for i in tok.encode("Hello. Ciao! 2017")]
    assert "▁Hello" in pieces and "▁Ciao" in pieces  # greetings are whole words
    assert [p for p in pieces if p.strip("▁").isdigit()] == list("2017")  # digits one by one


def test_coverage_counts_the_digits_and_marks_of_each_source_and_each_piece() -> None:
    from attenzione.translator import CARRIED_MARKS, DIGITS

    torch.manual_seed(0)
    tok = SentencePieceTokenizer.train(
        [s + " 1990 2017 555-1234, (a; b)" for s in SENTENCES] * 3, vocab_size=38, split_digits=True
    )
    tr = Translator(Transformer(_tiny_config(tok.vocab_size, tok.vocab_size, max_len=64)), tok, tok)
    assert tr._marks == ",;()"  # the training text had no colon: the vocabulary cannot write one
    sources = [
        "call 555-1234 in 2017",
        "the cat",
        "born in 1990, 90 cats (or dogs); no: yes",
        "2,017 cats, 1,990 dogs",  # a comma inside a number is the number's, not owed
        "scores 3 (4), 5",  # a bracket after a number's space is not inside it
    ]
    ids = [tr.encode_source(s) for s in sources]
    batch = torch.full((5, max(map(len, ids))), tr.model.config.pad_id, dtype=torch.long)
    for row, s in enumerate(ids):
        batch[row, : len(s)] = torch.tensor(s)
    cfg = DecodeConfig(number_coverage=0.5, punctuation_coverage=0.25)
    coverage = tr._coverage(batch, cfg)
    symbols = DIGITS + tr._marks
    for row, text in enumerate(sources):  # padding counts for nothing
        want = [text.count(c) for c in symbols]
        if row == 3:
            want[symbols.index(",")] = 1
        assert coverage.need[row].tolist() == want, text
    for i in range(tok.vocab_size):  # a piece writes the digits and marks of its text
        piece = tok.id_to_token(i)
        assert coverage.table[i].tolist() == [piece.count(c) for c in symbols], piece
    written = {str(d) for d in range(10) if coverage.table[:, d].any()}
    assert written == set("01234579")  # each digit the training text had is a piece
    assert coverage.weight is not None
    assert coverage.weight.tolist() == [0.5] * 10 + [0.25] * 4
    assert set(CARRIED_MARKS) - set(tr._marks) == {":"}
    # a model whose output layer is larger than the tokenizer: the table is the model's size
    wide = Translator(
        Transformer(_tiny_config(tok.vocab_size, tok.vocab_size + 3, max_len=64)), tok, tok
    )
    wide._coverage(batch, cfg).check(5, tok.vocab_size + 3)
    assert not wide._symbols_tgt[tok.vocab_size :].any()


def test_a_word_too_long_for_the_model_is_copied_unchanged() -> None:
    from attenzione.translator import ScoredTranslation

    torch.manual_seed(0)
    tok = SentencePieceTokenizer.train(
        [s + " 1990 2017" for s in SENTENCES] * 3, vocab_size=30, split_digits=True
    )
    model = Transformer(_tiny_config(tok.vocab_size, tok.vocab_size, max_len=64))
    tr = Translator(model, tok, tok, info={"max_src_tokens": 12})
    word = "x" + "0123456789" * 3  # a hash, say: digits are one token each
    assert len(tr.encode_source(word)) > tr.max_src_tokens
    line = f"the cat {word} the dog"
    assert tr._pieces(line) == ["the cat", word, "the dog"]
    out = tr.translate([line, word], beam=2)
    assert word in out[0].split() and out[1] == word
    # the service's path: the copied word has no tokens and no score of its own
    scored = tr.translate_scored([word, line], beam=2, n_best=2)
    assert scored[0] == [ScoredTranslation(word, 0.0, 0.0, (), 0)]
    assert [c.text for c in scored[1]] == [out[0]] and scored[1][0].pieces == 2
    assert scored[1][0].confidence == pytest.approx(
        scored[1][0].log_prob / (len(scored[1][0].ids) + 2)
    )
    with pytest.raises(ValueError, match="n-best list needs a shorter sentence"):
        tr.translate_n_best(line)


def test_source_is_normalised_as_the_training_data_was(translator: Translator) -> None:
    """The trainer turns "’" into "'", composes accents (NFC) and folds whitespace runs; the
    translator must read a user's text the same way, or the model sees what it never saw."""
    plain = translator.encode_source("the cat's house is here")
    assert translator.encode_source("the cat\u2019s  house\tis here ") == plain
    assert translator.encode_source("the cat\u02bcs house is here") == plain
    decomposed = "the cafe\u0301 is here"  # "é" as e + combining acute
    assert translator.encode_source(decomposed) == translator.encode_source("the café is here")
    assert translator.translate(["the cat\u2019s  house is here"], beam=2) == translator.translate(
        ["the cat's house is here"], beam=2
    )
    maps = translator.attention("the cat is here", "il cat\u2019s  is here")
    assert maps.translation == translator.tgt_tokenizer.decode(
        translator.tgt_tokenizer.encode("il cat's is here")
    )


@shipped
def test_shipped_model_reads_typographic_apostrophes_as_plain_ones() -> None:
    tr = Translator.from_pretrained()
    curly, plain = tr.translate(
        ["I don\u2019t know what it\u2019s about.", "I don't know what it's about."]
    )
    assert curly == plain, (curly, plain)
    assert "\u2019" not in curly and "non so" in curly, curly


def _tiny_bytes_translator() -> Translator:
    """An untrained model on a SentencePiece vocabulary with byte fallback, as the shipped
    one has: a pictograph is spelled in bytes."""
    torch.manual_seed(0)
    tok = SentencePieceTokenizer.train(
        [s + " 20°C" for s in SENTENCES] * 3, vocab_size=285, byte_fallback=True
    )
    return Translator(
        Transformer(_tiny_config(tok.vocab_size, tok.vocab_size, max_len=64)), tok, tok
    )


def _cut(tr: Translator, text: str) -> list[tuple[str, str, bool]]:
    """A line's stretches as (glue, text, translated?), for lines without inline tags."""
    stretches = tr._stretches(text)
    assert not any(s.tags for s in stretches), stretches
    return [(s.glue, s.text, s.readable) for s in stretches]


def test_pictographs_and_tags_are_carried_and_the_text_around_them_translated() -> None:
    tr = _tiny_bytes_translator()
    assert all(tr.carries(c) for c in "🍕😊★✓")
    assert not any(tr.carries(c) for c in "a°€£!.-")  # letters, units, currencies, marks
    # runs of pictographs with their joiners are carried whole, with the spacing they had
    family = "👨\u200d👩\u200d👧🇮🇹"
    assert _cut(tr, f"the cat 🍕 is here! 😊👍 {family}") == [
        ("", "the cat", True),
        (" ", "🍕", False),
        (" ", "is here!", True),
        (" ", "😊👍", False),
        (" ", family, False),
    ]
    assert _cut(tr, "the cat😊!") == [
        ("", "the cat", True),
        ("", "😊", False),
        ("", "!", False),
    ]
    assert _cut(tr, "😊 😊") == [("", "😊", False), (" ", "😊", False)]
    # a lone tag, a block tag and a pair with a cut inside are carried the same way; "a < b"
    # is no tag
    assert _cut(tr, 'see <a href="x.html">the cat.<br/>the dog') == [
        ("", "see", True),
        (" ", '<a href="x.html">', False),
        ("", "the cat.", True),
        ("", "<br/>", False),
        ("", "the dog", True),
    ]
    assert _cut(tr, "<b>the cat 🍕 is</b> here") == [
        ("", "<b>", False),
        ("", "the cat", True),
        (" ", "🍕", False),
        (" ", "is", True),
        ("", "</b>", False),
        (" ", "here", True),
    ]
    # so does a pair around no letter or digit (the model would drop "…"), and one next to a
    # digit (the number repair would read "1" and ",000" as two numbers)
    assert _cut(tr, "he said <b>…</b> nothing")[1:3] == [(" ", "<b>", False), ("", "…", False)]
    assert _cut(tr, "<b>1</b>,000 cats")[:2] == [("", "<b>", False), ("", "1", True)]
    # and one between two letters: taken out, "<a>Home</a><a>About</a>" would read "HomeAbout"
    assert [s.text for s in tr._stretches("<a>the cat</a><a>the dog</a> is here")] == [
        "<a>", "the cat", "</a>", "<a>", "the dog", "</a>", "is here"
    ]  # fmt: skip
    # an inline pair inside a stretch is taken out of its text, kept with it
    (inline, br) = tr._stretches('see <a href="x.html">the cat</a>.<br/>')
    assert (inline.glue, inline.text, inline.readable) == ("", "see the cat.", True)
    assert inline.tags == (Tag('<a href="x.html">', 3, 0, True), Tag("</a>", 9, 0, False))
    assert br == ("", "<br/>", False, ())
    # a pair around the whole stretch is carried around it; a pair around no text cuts
    assert _cut(tr, "<p><b>the cat</b></p> <i></i>now") == [
        ("", "<p>", False),
        ("", "<b>", False),
        ("", "the cat", True),
        ("", "</b>", False),
        ("", "</p>", False),
        (" ", "<i>", False),
        ("", "</i>", False),
        ("", "now", True),
    ]
    assert _cut(tr, "if a < b and c > d") == [("", "if a < b and c > d", True)]
    # a character shown as an emoji (the keycap "1️⃣", "©️") is carried whole; "≤" and "№"
    # stay in their sentence
    assert _cut(tr, "press 1\ufe0f\u20e3 now") == [
        ("", "press", True),
        (" ", "1\ufe0f\u20e3", False),
        (" ", "now", True),
    ]
    assert _cut(tr, "x ≤ 5 in room № 2") == [("", "x ≤ 5 in room № 2", True)]
    # the output is the translations of the stretches, in order, with the pictographs between
    first, second = tr.translate(["the cat is here", "the dog is there!"], beam=2)
    assert first and second
    line = "🎉 the cat is here 😊 the dog is there!"
    assert tr.translate([line], beam=2) == [f"🎉 {first} 😊 {second}"]
    assert tr.translate(["😊 👍 !"], beam=2) == ["😊 👍 !"]  # nothing to translate: kept
    scored = tr.translate_scored(["the cat is here 😊"], beam=2, n_best=2)[0]
    assert len(scored) == 2 and all(c.text.endswith(" 😊") for c in scored)
    assert scored[0].pieces == 1 and scored[0].read == "the cat is here"


def test_a_sentence_with_inline_tags_is_translated_whole_and_keeps_every_tag() -> None:
    tr = _tiny_bytes_translator()
    lines = [
        "the <b>cat</b> is here",
        "<i>the</i> dog is <b>there</b>!",
        'the <a href="x"><b>red</b> cat</a> is here',
        "THE <b>CAT</b> IS HERE",
        "the cat <b>is</b> here 😊 the <i>dog</i>",
    ]
    for line, out in zip(lines, tr.translate(lines, beam=2), strict=True):
        tags = [m.group(0) for m in MARKUP_TAG.finditer(line)]
        got = [m.group(0) for m in MARKUP_TAG.finditer(out)]
        assert sorted(got) == sorted(tags), (line, out)  # each once, as written
        pairs = inline_pairs(list(enumerate(got)))
        assert len(pairs) == len(tags) // 2, (line, out)  # nested, each opened before closed
        # the text is the translation of the sentence without its tags
        plain = tr.translate([MARKUP_TAG.sub("", line)], beam=2)[0]
        assert " ".join(MARKUP_TAG.sub("", out).split()) == " ".join(plain.split()), (line, out)
    # a stretch with tags that the model cannot read at once is cut at its tags instead
    tr.max_src_tokens = 6
    parts = tr._parts("the <b>cat</b> is here and the dog is there")
    assert [p.text for p in parts][:3] == ["the", "<b>", "cat"] and not any(p.tags for p in parts)


def test_a_line_in_capitals_is_translated_in_sentence_case_and_put_back_in_capitals() -> None:
    from attenzione.translator import _sentence_case, _shouting

    assert _shouting("WARNING: DO NOT OPEN") and _shouting("OK 😊")
    assert not _shouting("Open File") and not _shouting("I") and not _shouting("USA is big")
    assert _sentence_case("WARNING. DO NOT OPEN! WHAT DO I DO?", starts=True) == (
        "Warning. Do not open! What do I do?"
    )
    assert _sentence_case("IS HERE", starts=False) == "is here"
    tr = _tiny_bytes_translator()
    plain = tr.translate(["The cat is here"], beam=2)[0]
    assert tr.translate(["THE CAT IS HERE"], beam=2) == [plain.upper()]
    parts = tr._parts("THE CAT 🍕 IS HERE")
    assert [(p.text, p.upper) for p in parts] == [
        ("The cat", True),
        ("🍕", False),
        ("is here", True),
    ]
    # judged on the text, not on the tags around it; a code is not shouting
    assert [(p.text, p.upper) for p in tr._parts("<p>THE CAT IS HERE</p>")] == [
        ("<p>", False),
        ("The cat is here", True),
        ("</p>", False),
    ]
    assert [(p.text, p.upper) for p in tr._parts("ID: AB12CD")] == [("ID: AB12CD", False)]
    assert [(p.text, p.upper) for p in tr._parts("GO ON")] == [("Go on", True)]  # no code


def test_a_line_in_title_case_is_read_with_its_ordinary_words_in_lower_case() -> None:
    from attenzione.translator import _title_case

    assert _title_case("Scientists Discover New Species in the Amazon")
    assert not _title_case("Tom and Mary visited New York") and not _title_case("Open File")
    tr = _tiny_bytes_translator()
    # this vocabulary spells "red", "house", "here" and "today" in fewer pieces than "Red",
    # "House"…, and "is", "dog" in as many (several) as "Is", "Dog": those stay
    assert tr._truecase("The Red House Is Here. The Dog", starts=True) == (
        "The red house Is here. The Dog"
    )
    assert [p.text for p in tr._parts("The Red House Is Here Today")] == [
        "The red house Is here today"
    ]
    assert tr.translate(["The Red House Is Here Today"], beam=2) == tr.translate(
        ["The red house Is here today"], beam=2
    )
    # a word the data always translates is lower-cased even where the pieces do not tell
    tr.translated_words = ["is", "dog"]
    assert tr._truecase("The Red House Is Here. The Dog", starts=True) == (
        "The red house is here. The dog"
    )


@shipped
def test_shipped_model_carries_emoji_and_tags_and_translates_text_in_capitals() -> None:
    tr = Translator.from_pretrained()
    pizza, thanks, warning, save = tr.translate(
        ["I love pizza 🍕!", "Thanks! 😊", "WARNING: DO NOT OPEN THE DOOR.", "SAVE"]
    )
    assert pizza.endswith(" 🍕!") and "pizza" in pizza and "sbot" not in pizza, pizza
    assert thanks == "Grazie! 😊", thanks
    assert warning == warning.upper() and "PORTA" in warning and "DOOR" not in warning, warning
    assert save == "SALVA", save
    title = tr.translate("I Haven't Checked The Doors Yet.")[0]
    assert title == tr.translate("I haven't checked the doors yet.")[0], title
    assert tr._truecase("Tom Visited Boston", starts=True) == "Tom visited Boston"
    # "italy" is in the words the data always translates, but "Italy" is the form the
    # vocabulary knows: a name, kept; a curly apostrophe is read as the straight one
    assert "italy" in (tr.translated_words or [])
    assert tr._truecase("Tourists Return To Italy", starts=True) == "Tourists return to Italy"
    curly, straight = "The World\u2019s Best Pizza Recipes", "The World's Best Pizza Recipes"
    assert tr._truecase(curly, starts=True) == tr._truecase(straight, starts=True).replace(
        "'", "\u2019"
    )
    assert tr.translate(curly) == tr.translate(straight)
    assert tr.translate("SHIPS RETURN TO ITALY")[0].endswith("ITALIA"), "capitals"
    bold = tr.translate("<b>Tom</b> is photogenic, but Mary isn't.")[0]
    assert bold.startswith("<b>Tom</b> ") and "fotogenic" in bold and "-t>" not in bold, bold


@shipped
def test_shipped_model_places_inline_tags_in_a_sentence_translated_whole() -> None:
    # cut at its tags, "Click <b>Save</b> to keep your changes." was translated in three
    # pieces; "The <a>new version</a>" began "L'altro <a>nuova versione</a>"
    tr = Translator.from_pretrained()
    save, link, kbd = tr.translate(
        [
            "Click <b>Save</b> to keep your changes.",
            'The <a href="https://example.com">new version</a> is available now.',
            "Press <kbd>Ctrl</kbd>+<kbd>S</kbd> to save the file.",
        ]
    )
    assert "<b>Salva</b>" in save and save.startswith("Fa"), save
    assert '<a href="https://example.com">nuova versione</a>' in link, link
    assert link.startswith("La "), link
    assert kbd.count("<kbd>") == 2 and "<kbd>Ctrl</kbd>+<kbd>S</kbd>" in kbd, kbd
    assert MARKUP_TAG.sub("", save) == tr.translate("Click Save to keep your changes.")[0]
    # an n-best list of a sentence with inline tags: each candidate keeps them
    hyps = tr.translate_n_best("Click <b>Save</b> to keep your changes.", n_best=3)
    assert hyps[0][0] == save and all(h.count("<b>") == h.count("</b>") == 1 for h, _ in hyps)


@shipped
def test_shipped_model_n_best_and_attention_read_as_translate_does() -> None:
    tr = Translator.from_pretrained()
    best = tr.translate("THANK YOU 😊")[0]
    hyps = tr.translate_n_best("THANK YOU 😊", beam=4, n_best=3)
    assert hyps[0][0] == best == "GRAZIE 😊", hyps
    assert all(h.endswith(" 😊") and h == h.upper() for h, _ in hyps)
    assert tr.translate_n_best("😊 !") == [("😊 !", 0.0)]
    with pytest.raises(ValueError, match="pictographs or tags cut this sentence into 2"):
        tr.translate_n_best("I love 🍕 and pasta.")
    maps = tr.attention("I love pizza 🍕!")
    assert maps.source == "I love pizza" and "<0xF0>" not in maps.src_tokens
