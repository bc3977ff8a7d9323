"""Cleaning filters, corpus weights, exclusion of test sets and number augmentation."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from attenzione.config import TrainConfig
from attenzione.data import read_pairs, write_pairs
from attenzione.data.cleaning import (
    CleaningConfig,
    clean_corpus,
    placeholders,
    strip_accelerator_pair,
)
from attenzione.data.mixing import NUMBER, CorpusSpec, apply_weight, augment_numbers
from attenzione.training.data_prep import prepare
from attenzione.training.presets import get_preset
from toy_corpus import toy_pairs

GOOD = ("The file was saved.", "Il file è stato salvato.")

# one fixture line per filter, each failing exactly that filter
FIXTURE: dict[str, tuple[str, str]] = {
    "empty": ("   ", "Qualcosa."),
    "long": (" ".join(["word"] * 12), " ".join(["parola"] * 12)),
    "ratio": ("Open the document in a new window please.", "Aprireildocumento " * 8),
    "placeholders": ("Cannot open %s: %d errors.", "Impossibile aprire: errori."),
    "identical": ("Show hidden files now", "show hidden files now"),
    "untranslated": ("Save the file", "Save the file with the name of the project"),
    "excluded": ("This sentence is in a test set.", "Questa frase è in un test set."),
    "duplicate": GOOD,
}


def _config(**kw: object) -> CleaningConfig:
    base: dict[str, object] = dict(max_words=10, max_ratio=3.0, identical_min_words=3)
    base.update(kw)
    return CleaningConfig(**base)  # type: ignore[arg-type]


def test_each_filter_removes_its_line_and_reports_it() -> None:
    exclude = {"this sentence is in a test set."}
    pairs = [GOOD, *FIXTURE.values()]
    kept, report = clean_corpus(pairs, _config(), exclude=exclude)
    assert kept == [GOOD]
    assert report.read == len(pairs)
    assert report.kept == 1
    assert dict(report.removed) == {name: 1 for name in FIXTURE}
    assert report.to_dict()["removed"] == {name: 1 for name in FIXTURE}


@pytest.mark.parametrize("name", [n for n in FIXTURE if n != "empty"])  # empty: always
def test_each_filter_can_be_switched_off(name: str) -> None:
    off: object = {
        "long": dict(max_words=None),
        "ratio": dict(max_ratio=None),
        "placeholders": dict(placeholders=False),
        "identical": dict(identical_min_words=None),
        "untranslated": dict(untranslated=False),
        "excluded": "no-exclude",
        "duplicate": dict(dedup=False),
    }[name]
    pairs = [GOOD, FIXTURE[name]]
    exclude = None if off == "no-exclude" else {"this sentence is in a test set."}
    kwargs: dict[str, object] = off if isinstance(off, dict) else {}
    kept, report = clean_corpus(pairs, _config(**kwargs), exclude=exclude)
    assert len(kept) == 2, report.summary()


def test_the_untranslated_filter_reads_the_languages_it_is_given() -> None:
    """An Italian→English corpus: with its languages named, the filter keeps its translated
    pairs and drops a target still in Italian; read as English→Italian it would drop every
    good pair (each English target "reads as the source language")."""
    good = (GOOD[1], GOOD[0])
    left = ("Salva il file", "Salva il file con il nome del progetto")
    kept, report = clean_corpus([good, left], _config(src_lang="it", tgt_lang="en"))
    assert kept == [good] and report.removed["untranslated"] == 1
    kept, _ = clean_corpus([good], _config())
    assert kept == []
    kept, _ = clean_corpus([good, left], _config(src_lang="de", tgt_lang="en"))
    assert len(kept) == 2  # a language without function words: the filter keeps everything


def test_short_identical_pairs_are_names_and_are_kept() -> None:
    kept, _ = clean_corpus([("Firefox", "Firefox"), ("OK", "OK")], _config())
    assert len(kept) == 2


def test_placeholders_that_agree_are_kept_in_any_order() -> None:
    pair = ("Copied %1 of %2 files to <b>{ $dir }</b>", "Copiati in <b>{ $dir }</b> %2 su %1 file")
    kept, _ = clean_corpus([pair], _config(max_words=None))
    assert kept == [pair]
    assert placeholders("50% of the 100% done") == Counter()  # a percentage is not %o


def test_character_entities_are_escaped_text_not_placeholders() -> None:
    # Multi30k's Moses-tokenized English escapes the apostrophe its German does not need
    multi30k = ("a man &apos;s hand on a &quot; sign &quot; .", "die hand eines mannes .")
    escaped = ("tom &amp; jerry &lt;3 &#39;", "tom und jerry")
    kept, report = clean_corpus([multi30k, escaped], _config(src_lang="en", tgt_lang="de"))
    assert kept == [multi30k, escaped]
    assert report.removed["placeholders"] == 0
    assert placeholders("a man &apos;s &amp; &#39; &#x27;") == Counter()
    # a real placeholder mismatch still goes, entities or not
    dropped = [
        ("Cannot open %s &amp; retry", "Impossibile aprire %d &amp; riprova"),
        ("Hello {name}!", "Ciao!"),
        ("Press <b>OK</b> &apos;now&apos;", "Premi OK ora"),
    ]
    kept, report = clean_corpus(dropped, _config(max_words=None))
    assert kept == []
    assert report.removed["placeholders"] == 3


def test_accelerators_are_stripped_when_both_sides_have_one() -> None:
    assert strip_accelerator_pair("Save _As", "Salva _come") == ("Save As", "Salva come")
    assert strip_accelerator_pair("&Open", "&Apri") == ("Open", "Apri")
    assert strip_accelerator_pair("file_name", "file_name") is None  # an identifier, copied
    assert strip_accelerator_pair("R&&D", "R&&D") is None
    kept, report = clean_corpus([("_File", "_File"), ("Sa_ve", "_Salva")], _config())
    assert kept == [("File", "File"), ("Save", "Salva")]
    assert report.accelerators_stripped == 2


def test_duplicates_across_corpora_are_kept_once() -> None:
    seen: set[tuple[str, str]] = set()
    a, _ = clean_corpus([GOOD], _config(), seen=seen)
    b, report = clean_corpus([GOOD, ("Yes.", "Sì.")], _config(), seen=seen)
    assert a == [GOOD] and b == [("Yes.", "Sì.")]
    assert report.removed["duplicate"] == 1


def test_corpus_spec_parses_weights() -> None:
    assert CorpusSpec.parse("data/a.tsv") == CorpusSpec("data/a.tsv", 1.0)
    assert CorpusSpec.parse("data/a.tsv.gz:0.5") == CorpusSpec("data/a.tsv.gz", 0.5)
    assert CorpusSpec.parse("b.tsv:2").name == "b"
    with pytest.raises(ValueError, match="positive"):
        CorpusSpec.parse("a.tsv:0")
    with pytest.raises(ValueError, match="positive"):
        CorpusSpec.parse("a.tsv:-1")


def test_weights_repeat_and_subsample() -> None:
    pairs = [(f"s{i}", f"t{i}") for i in range(100)]
    assert Counter(apply_weight(pairs, 2, random.Random(0))) == Counter(pairs * 2)
    half = apply_weight(pairs, 0.5, random.Random(0))
    assert len(half) == 50 and len(set(half)) == 50
    one_and_half = Counter(apply_weight(pairs, 1.5, random.Random(0)))
    assert sorted(Counter(one_and_half.values()).items()) == [(1, 50), (2, 50)]
    assert apply_weight(pairs, 0.5, random.Random(3)) == apply_weight(pairs, 0.5, random.Random(3))


def test_number_augmentation_renumbers_both_sides_alike() -> None:
    pairs = [("I was born in 1990.", "Sono nato nel 1990."), ("No numbers.", "Niente numeri.")]
    pairs += [("Page 3 of 10.", "Pagina 3 di 10.")] * 5
    pairs += [("It costs 5 euros.", "Costa sei euro.")]  # 5 is not in the target: not used
    new = augment_numbers(pairs, 1.0, random.Random(0))
    assert len(new) == 6
    for src, tgt in new:
        assert sorted(NUMBER.findall(src)) == sorted(NUMBER.findall(tgt))
    assert new != pairs[:1] + pairs[2:7]
    assert augment_numbers(pairs, 1.0, random.Random(0)) == new


def _cfg(tmp_path: Path, **kw: object) -> TrainConfig:
    base: dict[str, object] = dict(
        data=str(tmp_path / "main.tsv"),
        out=str(tmp_path / "run"),
        preset="tiny",
        vocab_size=48,
        dev_size=8,
        test_size=8,
        seed=3,
        num_threads=1,
        progress=False,
    )
    base.update(kw)
    return TrainConfig(**base)  # type: ignore[arg-type]


def test_prepare_mixes_weighted_corpora_excludes_test_sets_and_reports(tmp_path: Path) -> None:
    main = toy_pairs()
    write_pairs(main, tmp_path / "main.tsv")
    extra = [(f"The code {i} is here.", f"Il codice {i} è qui.") for i in range(40)]
    extra += [("Cannot open %s.", "Impossibile aprire.")]  # dropped: placeholders
    write_pairs(extra, tmp_path / "extra.tsv.gz")
    test_set = [extra[0], main[5]]
    write_pairs(test_set, tmp_path / "test.tsv")
    cfg = _cfg(
        tmp_path,
        extra_data=(f"{tmp_path / 'extra.tsv.gz'}:2",),
        exclude=(str(tmp_path / "test.tsv"),),
    )
    data = prepare(cfg, get_preset("tiny"), tmp_path / "run", write=True)
    train = Counter(data.train)
    # weight 2: every kept extra pair twice; the excluded and the placeholder pair not at all
    for pair in extra[1:40]:
        assert train[pair] == 2
    assert train[extra[0]] == 0 and train[extra[40]] == 0
    # no sentence of the test set is trained on, on either side
    keys = {x.casefold() for pair in test_set for x in pair}
    assert not any(s.casefold() in keys or t.casefold() in keys for s, t in data.train)
    report = json.loads((tmp_path / "run" / "data" / "cleaning.json").read_text())
    assert report["extra"]["weight"] == 2
    assert report["extra"]["read"] == 41
    assert report["extra"]["removed"]["placeholders"] == 1
    assert report["extra"]["removed"]["excluded"] == 1
    assert report["main"]["removed"]["excluded"] >= 1
    # the written training split is what a resumed run reads back
    assert Counter(read_pairs(tmp_path / "run" / "data" / "train.tsv")) == train
    again = prepare(cfg, get_preset("tiny"), tmp_path / "run", write=True)
    assert again.train == data.train and again.dev == data.dev


def test_prepare_cleans_a_reversed_corpus_as_its_languages_say(tmp_path: Path) -> None:
    """The same pairs, English→Italian and Italian→English with --src-lang it --tgt-lang
    en: cleaning keeps the same pairs, and the untranslated filter drops none."""
    pairs = toy_pairs()
    write_pairs(pairs, tmp_path / "main.tsv")
    forward = prepare(_cfg(tmp_path), get_preset("tiny"), tmp_path / "f", write=True)
    write_pairs([(it, en) for en, it in pairs], tmp_path / "main.tsv")
    cfg = _cfg(tmp_path, src_lang="it", tgt_lang="en")
    backward = prepare(cfg, get_preset("tiny"), tmp_path / "b", write=True)
    swap = lambda split: sorted((t, s) for s, t in split)  # noqa: E731
    assert sorted(backward.train) == swap(forward.train)
    assert sorted(backward.dev + backward.test) == swap(forward.dev + forward.test)
    report = json.loads((tmp_path / "b" / "data" / "cleaning.json").read_text())
    assert report["main"]["removed"]["untranslated"] == 0
    wrong, _ = clean_corpus([(it, en) for en, it in pairs], _config(max_words=None))
    assert len(wrong) < len(pairs) / 2  # read as English→Italian, most English targets go


def test_extra_dev_sets_are_kept_and_never_trained_on(tmp_path: Path) -> None:
    main = toy_pairs()
    write_pairs(main, tmp_path / "main.tsv")
    write_pairs(main[:4], tmp_path / "flores.tsv")
    cfg = _cfg(tmp_path, extra_dev=(f"fl={tmp_path / 'flores.tsv'}",))
    data = prepare(cfg, get_preset("tiny"), tmp_path / "run", write=True)
    assert data.extra_dev == {"fl": main[:4]}
    assert not set(main[:4]) & set(data.train)
    resumed = prepare(cfg, get_preset("tiny"), tmp_path / "run", write=False)
    assert resumed.extra_dev == data.extra_dev


@pytest.mark.parametrize(
    ("source", "raw", "repaired"),
    [
        ("I was born in 2017.", "Sono nato nel 20177.", "Sono nato nel 2017."),
        ("Call 555-1234.", "Chiama il 555255325525555.", "Chiama il 555-1234."),
        ("From 1990 to 2000.", "Dal 1990 al 20000.", "Dal 1990 al 2000."),
        ("It costs 1,000 euros.", "Costa 1.000 euro.", "Costa 1.000 euro."),  # localised: kept
        ("I have two cats.", "Ho 2 gatti.", "Ho 2 gatti."),  # nothing to put back
        ("Room 12.", "Camera dodici.", "Camera dodici."),  # no number to replace
        ("No numbers.", "Nessun numero 5.", "Nessun numero 5."),
        # a missing number glued to a word is set apart, once per missing number
        ("The 10 gunmen.", "I 10men.", "I 10 men."),
        ("He has 10 cats.", "Ha 10gatti e 10cani.", "Ha 10 gatti e 10cani."),
        ("A 3D film, 3 hours.", "Un film 3D, tre ore.", "Un film 3D, tre ore."),  # source's own
        ("The 10 men and 100men.", "I 10men e 100men.", "I 10 men e 100men."),  # whole tokens
        ("An 18-year-old.", "Un 18enne.", "Un 18enne."),  # an Italian word
        ("1 dog, 7 cats.", "1 cane, 7gatti.", "1 cane, 7 gatti."),
        ("On May 1 we rest.", "Il 1º maggio riposiamo.", "Il 1º maggio riposiamo."),  # ordinal
        ("A 4 x 4 grid.", "Una griglia 4x4.", "Una griglia 4x4."),  # a dimension
        ("It is 2 times faster.", "È 2x più veloce.", "È 2x più veloce."),  # one letter
        ("The 3DS, 3 games.", "Il 3ds, tre giochi.", "Il 3ds, tre giochi."),  # any case
    ],
)
def test_repair_numbers_puts_back_garbled_numbers_only(
    source: str, raw: str, repaired: str
) -> None:
    from attenzione.data.numbers import repair_numbers
    from attenzione.languages import pair_words

    assert repair_numbers(source, raw, pair_words("en", "it")) == repaired
