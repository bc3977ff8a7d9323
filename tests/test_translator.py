"""The translator's core through its public interface, on tiny untrained models made here.

Loading and saving a model directory, what a translation carries (candidates best first,
ids, confidence), blank and bad input, streaming, the pipeline and ranking terms a model
directory records and the ones a caller picks (``steps=()``: the model alone), the attention
maps, and ``attenzione translate`` reading and writing files. What each text step does is
tests/test_pipeline.py's; what the shipped model does with them, tests/test_shipped_model.py's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from attenzione.cli import app
from attenzione.config import DecodeConfig, search_config
from attenzione.data import SentencePieceTokenizer, WordTokenizer
from attenzione.model.transformer import Transformer
from attenzione.pipeline import Pipeline
from attenzione.pipeline.carry import MARKUP_TAG
from attenzione.pipeline.markup import inline_pairs
from attenzione.search.registry import Terms
from attenzione.translator.translator import Candidate, Translation, Translator
from compare import assert_same_results
from tiny_model import tiny_config

SENTENCES = [
    f"the {a} {n} is {v} today"
    for a in ("red", "old", "big")
    for n in ("cat", "dog", "house")
    for v in ("here", "there")
]
ALL_STEPS = Pipeline.build().names
# beam search of two candidates, cut short: an untrained model writes on to the length cap
SHORT = DecodeConfig(method="beam", beam_size=2, n_best=2, max_len_a=0, max_len_b=12)


@pytest.fixture(scope="module")
def translator() -> Translator:
    """Word-level source, SentencePiece target; reads at most 12 source tokens at once and
    its positions reach 31."""
    torch.manual_seed(0)
    src = WordTokenizer.train(SENTENCES)
    tgt = SentencePieceTokenizer.train(
        [s.replace("the", "il") for s in SENTENCES] * 3, vocab_size=24
    )
    cfg = tiny_config(src.vocab_size, tgt.vocab_size, max_len=32)
    return Translator(Transformer(cfg), src, tgt, info={"max_src_tokens": 12})


@pytest.fixture(scope="module")
def bytes_translator() -> Translator:
    """A SentencePiece vocabulary with byte fallback on both sides, as the shipped model has:
    a pictograph is spelled in bytes, and carried."""
    torch.manual_seed(0)
    tok = SentencePieceTokenizer.train(
        [s + " 20°C" for s in SENTENCES] * 3, vocab_size=285, byte_fallback=True
    )
    cfg = tiny_config(tok.vocab_size, tok.vocab_size, max_len=64)
    return Translator(Transformer(cfg), tok, tok)


@pytest.fixture(scope="module")
def saved(translator: Translator, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("models") / "tiny"
    translator.save_pretrained(path)
    return path


def _texts(results: list[Translation]) -> list[str]:
    return [r.text for r in results]


def _one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    message = str(exc.value)
    assert message and "\n" not in message, message
    return message


# ---------------------------------------------------------------- loading and saving


def test_save_and_load_give_identical_translations(
    translator: Translator, saved: Path, tmp_path: Path
) -> None:
    again = Translator.from_pretrained(saved)
    texts = ["the red cat is here", "the dog is there today"]
    search = search_config(3, 2)
    # the loaded model runs model/fast's kernels, the one made here the reference: the same
    # texts and ids, scores to a tolerance
    assert_same_results(
        again.translate(texts, search=search), translator.translate(texts, search=search)
    )
    assert again.pipeline.names == translator.pipeline.names == ALL_STEPS
    assert again.terms == translator.terms
    assert again.max_src_tokens == translator.max_src_tokens == 12
    half = tmp_path / "half"
    translator.save_pretrained(half, dtype=torch.float16)
    assert (half / "model.safetensors").stat().st_size < (
        saved / "model.safetensors"
    ).stat().st_size
    assert len(Translator.from_pretrained(half).translate(texts)) == 2


def test_a_missing_or_damaged_model_directory_is_a_clear_error(saved: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist") as missing:
        Translator.from_pretrained(tmp_path / "nope")
    _one_line(missing)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="config.json"):
        Translator.from_pretrained(tmp_path / "empty")
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match="not a model directory"):
        Translator.from_pretrained(tmp_path / "file")
    with pytest.raises(ValueError, match="precision must be one of") as bad:
        Translator.from_pretrained(saved, precision="fp8")
    _one_line(bad)


def test_precisions_load_and_translate(saved: Path) -> None:
    for precision in ("bf16", "int8"):
        fast = Translator.from_pretrained(saved, precision=precision)
        out = fast.translate(["the red cat is here", ""], search=search_config(2))
        assert len(out) == 2 and out[0].candidates[0].pieces == 1 and out[1].text == ""


# ---------------------------------------------------------------- what a translation carries


def test_a_translation_lists_its_candidates_best_first_with_their_ids(
    translator: Translator,
) -> None:
    (result,) = translator.translate(" the red cat is here ", search=search_config(4, 3))
    assert isinstance(result, Translation) and result.source == " the red cat is here "
    cands = result.candidates
    assert 1 <= len(cands) <= 3
    assert len({c.text for c in cands}) == len(cands)  # distinct
    assert [c.score for c in cands] == sorted((c.score for c in cands), reverse=True)
    assert result.text == str(result) == cands[0].text
    decode = translator.tgt_tokenizer.decode
    for c in cands:
        assert isinstance(c, Candidate) and c.ids and c.pieces == 1
        assert c.read == "the red cat is here"  # what the model read
        assert c.text == decode(list(c.ids))  # no step changed this output
        # the mean log-prob per token, <eos> counted
        assert c.confidence == pytest.approx(c.log_prob / (len(c.ids) + 1))
        assert c.log_prob < 0 and c.confidence <= 0
    # the best candidate is what a one-candidate search gives
    assert translator.translate("the red cat is here", search=search_config(4))[0].text in {
        c.text for c in cands
    }


def test_greedy_decoding_scores_a_candidate_by_its_total_log_prob(translator: Translator) -> None:
    (result,) = translator.translate("the red cat is here", search=search_config(1))
    (cand,) = result.candidates
    assert cand.score == pytest.approx(cand.log_prob)
    assert cand.confidence == pytest.approx(cand.log_prob / (len(cand.ids) + 1))


def test_sampling_is_reproducible_with_a_seed(translator: Translator) -> None:
    search = search_config(sample=True, seed=5, temperature=2.0)
    a = translator.translate(["the cat is here"] * 3, search=search)
    b = translator.translate(["the cat is here"] * 3, search=search)
    assert a == b


def test_blank_lines_give_blank_translations(translator: Translator) -> None:
    out = translator.translate(["", "   ", "the cat is here", "\t"], search=search_config(2))
    assert len(out) == 4
    for k in (0, 1, 3):
        assert out[k].text == "" and out[k].candidates == (Candidate(""),)
    assert out[2].text and out[2].candidates[0].pieces == 1
    assert translator.translate([]) == []


def test_batch_results_come_back_in_input_order(translator: Translator) -> None:
    texts = ["the cat is here today", "the big dog", "the old house is there", "cat"]
    search = search_config(1)
    together = translator.translate(texts, search=search, batch_size=2)
    alone = [translator.translate(t, search=search)[0] for t in texts]
    assert [r.source for r in together] == texts
    assert _texts(together) == _texts(alone)
    assert [r.candidates[0].ids for r in together] == [r.candidates[0].ids for r in alone]
    for a, b in zip(together, alone, strict=True):  # padding moves the sums in the last bits
        assert a.candidates[0].log_prob == pytest.approx(b.candidates[0].log_prob, abs=1e-4)


def test_translate_iter_streams_in_input_order(translator: Translator) -> None:
    """Output arrives chunk by chunk, before the input is exhausted, in input order."""
    texts = ["the cat is here today", "", "the big dog", "the old house is there", "cat"] * 3
    consumed: list[int] = []

    def lines() -> Iterator[str]:
        for i, t in enumerate(texts):
            consumed.append(i)
            yield t

    stream = translator.translate_iter(lines(), batch_size=2, chunk=4)
    assert consumed == []  # lazy: nothing read before the first translation is asked for
    first = next(stream)
    assert len(consumed) <= 5  # one chunk (and the look-ahead that ends it), not all 15
    rest = list(stream)
    # other batches (chunks of 4 against the whole list by length): scores to a tolerance
    assert_same_results([first, *rest], translator.translate(texts, batch_size=2))


# ---------------------------------------------------------------- bad input


def test_bad_inputs_are_one_line_value_errors(translator: Translator) -> None:
    with pytest.raises(ValueError, match="input 1 is int, not a string") as exc:
        translator.translate(["the cat", 3])  # type: ignore[list-item]
    _one_line(exc)
    for size in (0, -1):
        with pytest.raises(ValueError, match="batch_size must be >= 1") as exc:
            translator.translate(["the cat"], batch_size=size)
        _one_line(exc)
        with pytest.raises(ValueError, match="batch_size must be >= 1"):
            translator.translate_ids([translator.encode_source("the cat")], batch_size=size)
        with pytest.raises(ValueError, match="batch_size must be >= 1"):
            list(translator.translate_iter(["the cat"], batch_size=size))
    with pytest.raises(ValueError, match="chunk must be >= 1") as exc:
        list(translator.translate_iter(["the cat"], chunk=0))
    _one_line(exc)
    with pytest.raises(ValueError, match="number_format must be one of") as exc:
        translator.replace(number_format="roman")
    _one_line(exc)
    assert translator.number_format == "keep"
    with pytest.raises(ValueError, match="empty") as exc:
        translator.attention("   ")
    _one_line(exc)
    with pytest.raises(ValueError, match="number-coverage") as exc:
        Terms(number_coverage=-1)
    _one_line(exc)


@pytest.mark.parametrize("steps", [["normalize", "bogus"], ["title_case"]])
def test_an_unknown_step_name_is_a_value_error_naming_the_steps(
    translator: Translator, steps: list[str]
) -> None:
    with pytest.raises(ValueError, match="unknown text step") as exc:
        translator.translate("the cat", steps=steps)
    message = _one_line(exc)
    assert steps[-1] in message and all(name in message for name in ALL_STEPS), message
    with pytest.raises(ValueError, match="unknown text step"):
        list(translator.translate_iter(["the cat"], steps=steps))


def test_a_line_too_long_with_the_split_step_off_is_a_one_line_error(
    translator: Translator,
) -> None:
    line = "the old dog " * 20  # 61 source tokens with <eos>: past what any setting reads
    assert len(translator.encode_source(line)) > translator.model.config.max_len
    no_split = [n for n in ALL_STEPS if n != "split"]
    for steps in (no_split, ()):
        with pytest.raises(ValueError, match="reads at most") as exc:
            translator.translate(["the cat", line], steps=steps)
        message = _one_line(exc)
        assert "input 1" in message and "'split' step" in message, message
    # with the split step it is translated in pieces that fit
    (result,) = translator.translate(line)
    assert result.candidates[0].pieces > 1 and result.candidates[0].read == ""


def test_a_word_too_long_for_the_model_is_copied_unchanged() -> None:
    torch.manual_seed(0)
    tok = SentencePieceTokenizer.train(
        [s + " 1990 2017" for s in SENTENCES] * 3, vocab_size=30, split_digits=True
    )
    model = Transformer(tiny_config(tok.vocab_size, tok.vocab_size, max_len=64))
    tr = Translator(model, tok, tok, info={"max_src_tokens": 12})
    word = "x" + "0123456789" * 3  # a hash, say: digits are one token each
    assert len(tr.encode_source(word)) > tr.max_src_tokens
    line = f"the cat {word} the dog"
    alone, whole = tr.translate([word, line], search=search_config(2, 2))
    # the copied word has no tokens and no score of its own
    assert alone.candidates == (Candidate(word),)
    assert word in whole.text.split()
    (cand,) = whole.candidates  # several segments: one candidate, each one's best joined
    assert cand.pieces == 2 and cand.read == ""
    assert cand.confidence == pytest.approx(cand.log_prob / (len(cand.ids) + 2))


# ---------------------------------------------------------------- pipeline and terms chosen


def test_no_steps_is_the_model_alone(bytes_translator: Translator) -> None:
    """``steps=()`` gives exactly what decoding the encoded text gives: no step reads it."""
    tr = bytes_translator
    texts = ["THE cat\u2019s  here 😊", "the <b>red</b> cat", "  the dog is there today  "]
    search = SHORT
    raw = tr.translate(texts, search=search, steps=())
    hyps = tr.translate_ids([tr.encode_source(t.strip()) for t in texts], search=search)
    for text, result, h in zip(texts, raw, hyps, strict=True):
        assert result.source == text
        assert [c.ids for c in result.candidates] == [tuple(x.tokens) for x in h]
        assert [c.text for c in result.candidates] == [tr.tgt_tokenizer.decode(x.tokens) for x in h]
        assert [c.score for c in result.candidates] == [x.score for x in h]
        assert [c.log_prob for c in result.candidates] == [x.log_prob for x in h]
        assert all(c.pieces == 1 and c.read == text.strip() for c in result.candidates)
    # an empty pipeline object is the same as no names
    assert tr.translate(texts, search=search, steps=Pipeline.build(())) == raw
    # the full pipeline carries the emoji instead of reading it
    full = tr.translate(texts[0], search=search)[0]
    assert full.text.endswith(" 😊") and full.candidates[0].read == "THE cat's here"


def test_terms_none_ranks_by_the_models_length_normalised_log_prob(
    bytes_translator: Translator,
) -> None:
    """``--raw``'s terms: beam search ranks by the model's length-normalised log-prob, with
    no charge; the default terms charge a candidate that leaves the source's digits out."""
    tr = bytes_translator
    texts = ["the cat is here 2020", "the red dog 20 20"]
    search = SHORT
    raw = tr.translate(texts, search=search, steps=(), terms=Terms.none())
    ids = [tr.encode_source(t) for t in texts]
    hyps = tr.translate_ids(ids, search=search, terms=Terms.none())
    assert [[c.ids for c in r.candidates] for r in raw] == [
        [tuple(x.tokens) for x in h] for h in hyps
    ]
    for result in raw:
        for c in result.candidates:
            # ended by <eos> (counted in the length), or cut at the length cap
            normalised = {c.log_prob / (len(c.ids) + 1), c.log_prob / len(c.ids)}
            assert any(c.score == pytest.approx(n) for n in normalised), c
    # the terms never change a candidate's log-prob, only its rank and score
    charged = tr.translate_ids(ids, search=search)
    for h_raw, h_terms in zip(hyps, charged, strict=True):
        by_tokens = {tuple(x.tokens): x for x in h_raw}
        for x in h_terms:
            if tuple(x.tokens) in by_tokens:
                same = by_tokens[tuple(x.tokens)]
                assert x.log_prob == pytest.approx(same.log_prob)
                assert x.score <= same.score + 1e-6
    # weights are checked, and each term can be switched off by name
    assert Terms.none() == Terms(dict.fromkeys(Terms(), 0.0))
    off = Terms().without(["number-coverage", "word-check"])
    assert off["number-coverage"] == 0 and off["word-check"] == 0
    assert off["punctuation-coverage"] == Terms()["punctuation-coverage"] > 0


def test_byte_pieces_are_written_only_to_copy_the_source(bytes_translator: Translator) -> None:
    """With byte fallback, an untrained model sampling at random would spell stray bytes
    ("�"); translate_ids lets the output hold only the byte pieces its source has."""
    tr = bytes_translator
    tok = tr.tgt_tokenizer
    byte_ids = {i for i in range(tok.vocab_size) if tok.id_to_token(i).startswith("<0x")}
    assert len(byte_ids) == 256
    source = "the red cat is here, Dvořák"  # letters the vocabulary lacks: byte pieces
    allowed = byte_ids & set(tr.encode_source(source))
    assert 2 <= len(allowed) < 20
    for search in (
        DecodeConfig(method="sample", seed=1, max_len_a=0, max_len_b=20),
        DecodeConfig(method="beam", beam_size=3, n_best=3, max_len_a=0, max_len_b=20),
    ):
        with_bytes, without = (
            {t for h in hyps for t in h.tokens}
            for hyps in tr.translate_ids(
                [tr.encode_source(source), tr.encode_source("the old dog is there")],
                search=search,
            )
        )
        assert with_bytes & byte_ids <= allowed and not without & byte_ids


def test_the_pipeline_recorded_in_info_json_is_the_default(
    bytes_translator: Translator, tmp_path: Path
) -> None:
    tr = bytes_translator
    path = tmp_path / "m"
    tr.save_pretrained(path)
    assert Translator.from_pretrained(path).pipeline.names == ALL_STEPS  # none recorded: all
    info = json.loads((path / "info.json").read_text(encoding="utf-8"))
    info["pipeline"] = {"steps": ["normalize", "carry"], "terms": {"number-coverage": 0.0}}
    (path / "info.json").write_text(json.dumps(info), encoding="utf-8")
    fewer = Translator.from_pretrained(path)
    assert fewer.pipeline.names == ("normalize", "carry")
    assert fewer.terms == Terms(number_coverage=0.0)
    lines = ["THE CAT IS HERE 😊", "the cat 2020 is here"]
    search = SHORT
    # loaded (model/fast's kernels) against made here (the reference): scores to a tolerance
    assert_same_results(
        fewer.translate(lines, search=search),
        tr.translate(
            lines, search=search, steps=["normalize", "carry"], terms=Terms(number_coverage=0.0)
        ),
    )
    # the caller's choice still wins
    assert_same_results(
        fewer.translate(lines, search=search, steps=ALL_STEPS),
        tr.translate(lines, search=search, terms=Terms(number_coverage=0.0)),
    )
    # saved again, the record travels with the model
    fewer.save_pretrained(tmp_path / "again")
    assert Translator.from_pretrained(tmp_path / "again").pipeline.names == ("normalize", "carry")


@pytest.mark.parametrize(
    "record",
    [
        {"steps": ["normalize", "shout"]},
        {"terms": {"number-covrage": 1.0}},
        {"terms": {"word-check": -1}},
        {"steps": "normalize"},
    ],
)
def test_a_bad_pipeline_record_is_a_one_line_error(
    saved: Path, tmp_path: Path, record: dict[str, object]
) -> None:
    import shutil

    path = tmp_path / "m"
    shutil.copytree(saved, path)
    info = json.loads((path / "info.json").read_text(encoding="utf-8"))
    info["pipeline"] = record
    (path / "info.json").write_text(json.dumps(info), encoding="utf-8")
    with pytest.raises(ValueError, match="info.json: a bad pipeline") as exc:
        Translator.from_pretrained(path)
    _one_line(exc)


# ---------------------------------------------------------------- the pipeline around the core


def test_carried_pictographs_stand_between_the_translated_stretches(
    bytes_translator: Translator,
) -> None:
    tr = bytes_translator
    search = SHORT
    first, second = _texts(tr.translate(["the cat is here.", "the dog is there!"], search=search))
    assert first and second
    (line,) = tr.translate("🎉 the cat is here. 😊 the dog is there!", search=search)
    assert line.text == f"🎉 {first} 😊 {second}"
    assert line.candidates[0].pieces == 2 and line.candidates[0].read == ""
    # inside a sentence (after a word, before a lower-case one) it does not cut: one reading
    (inside,) = tr.translate("the cat is here 😊 the dog is there!", search=search)
    (whole,) = tr.translate("the cat is here the dog is there!", search=search)
    best = inside.candidates[0]
    assert best.pieces == 1 and best.read == "the cat is here the dog is there!"
    assert best.ids == whole.candidates[0].ids
    assert inside.text.count("😊") == 1 and inside.text.replace(" 😊", "") == whole.text
    # nothing to translate: kept as it is, no tokens
    (kept,) = tr.translate("😊 👍 !", search=search)
    assert kept.candidates == (Candidate("😊 👍 !"),)
    # one stretch of text: an n-best list, each candidate with the emoji after it
    (scored,) = tr.translate("the cat is here 😊", search=SHORT)
    assert len(scored.candidates) == 2
    assert all(c.text.endswith(" 😊") for c in scored.candidates)
    assert all(c.pieces == 1 and c.read == "the cat is here" for c in scored.candidates)


def test_a_sentence_with_inline_tags_is_translated_whole_and_keeps_every_tag(
    bytes_translator: Translator,
) -> None:
    tr = bytes_translator
    search = SHORT
    lines = [
        "the <b>cat</b> is here",
        "<i>the</i> dog is <b>there</b>!",
        'the <a href="x"><b>red</b> cat</a> is here',
        "THE <b>CAT</b> IS HERE",
        "the cat <b>is</b> here 😊 the <i>dog</i>",
    ]
    plain = _texts(tr.translate([MARKUP_TAG.sub("", line) for line in lines], search=search))
    for line, out, bare in zip(lines, tr.translate(lines, search=search), plain, strict=True):
        tags = MARKUP_TAG.findall(line)
        got = MARKUP_TAG.findall(out.text)
        assert sorted(got) == sorted(tags), (line, out.text)  # each once, as written
        pairs = inline_pairs(list(enumerate(got)))
        assert len(pairs) == len(tags) // 2, (line, out.text)  # nested, opened before closed
        # the text is the translation of the sentence without its tags
        assert " ".join(MARKUP_TAG.sub("", out.text).split()) == " ".join(bare.split())


def test_a_line_in_capitals_or_title_case_is_read_as_a_sentence(
    bytes_translator: Translator,
) -> None:
    tr = bytes_translator
    search = SHORT
    loud, plain, title, lowered = _texts(
        tr.translate(
            [
                "THE CAT IS HERE",
                "The cat is here",
                "The Red House Is Here Today",
                "The red house Is here today",
            ],
            search=search,
        )
    )
    assert loud == plain.upper()
    assert title == lowered
    # a Windows file's byte-order mark and a curly apostrophe are read as the training data
    assert (
        _texts(tr.translate(["\ufeffthe cat\u2019s  house", "the cat's house"]))
        == [tr.translate("the cat's house")[0].text] * 2
    )


# ---------------------------------------------------------------- attention


def test_attention_maps_have_one_row_per_token(translator: Translator) -> None:
    cfg = translator.model.config
    maps = translator.attention("the red cat is here")
    s, t = len(maps.src_tokens), len(maps.tgt_tokens)
    assert maps.src_tokens == ["the", "red", "cat", "is", "here", "<eos>"]
    assert maps.tgt_tokens[0] == "<bos>" and maps.out_tokens[-1] == "<eos>"
    assert maps.out_tokens[:-1] == maps.tgt_tokens[1:]
    assert tuple(maps.encoder.shape) == (cfg.n_enc_layers, cfg.n_heads, s, s)
    assert tuple(maps.decoder.shape) == (cfg.n_dec_layers, cfg.n_heads, t, t)
    assert tuple(maps.cross.shape) == (cfg.n_dec_layers, cfg.n_heads, t, s)
    assert not maps.teacher_forced
    assert maps.translation == translator.translate("the red cat is here")[0].text
    # each query's weights sum to one over the keys it may see
    assert torch.allclose(maps.cross.sum(dim=-1), torch.ones(cfg.n_dec_layers, cfg.n_heads, t))
    # a reference translation is teacher-forced
    forced = translator.attention("the red cat is here", "il gatto")
    assert forced.teacher_forced and forced.translation == "il gatto"
    assert forced.out_tokens[:-1] == forced.tgt_tokens[1:]
    assert tuple(forced.cross.shape)[2:] == (len(forced.tgt_tokens), s)


def test_attention_replays_a_candidates_own_tokens(translator: Translator) -> None:
    (result,) = translator.translate("the old dog is there", search=search_config(3, 2))
    for cand in result.candidates:
        maps = translator.attention(cand.read, tgt_ids=cand.ids)
        pieces = [translator.tgt_tokenizer.id_to_token(i) for i in cand.ids]
        assert maps.out_tokens == [*pieces, "<eos>"]
        assert maps.translation == cand.text


def test_attention_refuses_a_sentence_longer_than_the_model_reads(translator: Translator) -> None:
    """It used to cut the source (and its <eos>), showing an input translate() never sees."""
    long = "the old dog " * 10
    assert len(translator.encode_source(long)) > translator.max_src_tokens
    with pytest.raises(ValueError, match="reads at most") as exc:
        translator.attention(long)
    _one_line(exc)


def test_attention_reads_a_sentence_as_translate_does(bytes_translator: Translator) -> None:
    tr = bytes_translator
    maps = tr.attention("the cat is here 😊", beam=1)
    assert not any(p.startswith("<0x") for p in maps.src_tokens)  # the emoji is carried
    assert maps.src_tokens == [
        tr.src_tokenizer.id_to_token(i) for i in tr.encode_source("the cat is here")
    ]
    greedy = tr.translate("the cat is here", search=search_config(1))[0].text
    assert maps.translation.strip() == greedy


# ---------------------------------------------------------------- attenzione translate


def test_cli_translate_file_to_file_keeps_blank_lines(
    translator: Translator, saved: Path, tmp_path: Path
) -> None:
    texts = ["the cat is here today", "", "the big dog"] * 3
    src = tmp_path / "in.txt"
    src.write_text("\n".join(texts) + "\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    res = CliRunner().invoke(
        app, ["translate", "--model", str(saved), "-i", str(src), "-o", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert out.read_text(encoding="utf-8").splitlines() == _texts(translator.translate(texts))
    assert f"wrote 6 translations (9 lines) to {out}" in res.output  # blank lines are not


def test_cli_translate_keeps_a_windows_files_line_ends_and_its_bom(
    saved: Path, tmp_path: Path
) -> None:
    outputs = {}
    for name, data in (
        ("windows", b"\xef\xbb\xbfthe red cat is here\r\n\r\nthe dog is there\r\n"),
        ("unix", b"the red cat is here\n\nthe dog is there\n"),
    ):
        src, out = tmp_path / f"{name}.txt", tmp_path / f"{name}.out"
        src.write_bytes(data)
        args = ["translate", "--model", str(saved), "-i", str(src), "-o", str(out)]
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.output
        outputs[name] = out.read_bytes()
    assert outputs["windows"].count(b"\r\n") == 3
    assert outputs["windows"].startswith(b"\xef\xbb\xbf")  # kept, as the service keeps it
    assert outputs["windows"][3:].replace(b"\r\n", b"\n") == outputs["unix"]
    assert b"\r" not in outputs["unix"]


def test_cli_raw_is_the_model_alone(translator: Translator, saved: Path) -> None:
    texts = ["the red cat is here", "the dog is there today"]
    res = CliRunner().invoke(app, ["translate", "--model", str(saved), "--raw", *texts])
    assert res.exit_code == 0, res.output
    raw = translator.translate(texts, steps=(), terms=Terms.none())
    assert res.output.splitlines() == _texts(raw)


def test_cli_no_step_switches_one_step_off(translator: Translator, saved: Path) -> None:
    line = "THE RED CAT IS HERE"
    for args, steps in (([], ALL_STEPS), (["--no-step", "capitals"], None)):
        res = CliRunner().invoke(app, ["translate", "--model", str(saved), *args, line])
        assert res.exit_code == 0, res.output
        if steps is None:
            steps = tuple(n for n in ALL_STEPS if n != "capitals")
        assert res.output.splitlines() == _texts(translator.translate(line, steps=steps))
    assert translator.translate(line)[0].text.isupper()


def test_cli_translate_errors_are_one_line(saved: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    for args, needle in (
        (["--model", str(tmp_path / "nope"), "hello"], "does not exist"),
        (["--model", str(saved), "--input", str(tmp_path / "missing.txt")], "missing.txt"),
        (["--model", str(saved), "--precision", "fp8", "hello"], "precision must be one of"),
    ):
        res = runner.invoke(app, ["translate", *args])
        assert res.exit_code == 2, res.output
        assert needle in res.output and "Traceback" not in res.output, res.output
