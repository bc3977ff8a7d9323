"""Numbers written in the target's convention: 55,000 → 55.000 and 2.3 → 2,3 for Italian."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attenzione.cli import app
from attenzione.data.currency import restore_currency
from attenzione.data.numbers import label_carried, localize_numbers, number_format_of
from attenzione.evaluation import number_fidelity
from attenzione.languages import pair_words
from attenzione.translator.translator import PRETRAINED_DIR, Translator

# the words of the shipped pairs' language profiles (labels, months, currency words)
EN_IT, IT_EN = pair_words("en", "it"), pair_words("it", "en")


@pytest.mark.parametrize(
    ("source", "translation", "expected"),
    [
        # thousands groups and decimals the model copied as written
        (
            "It holds 55,000 barrels (2.3 million gallons).",
            "Contiene 55,000 barili (2.3 milioni di galloni).",
            "Contiene 55.000 barili (2,3 milioni di galloni).",
        ),
        (
            "Sales rose to 1,234,567.89 dollars.",
            "Vendite a 1,234,567.89 dollari.",
            "Vendite a 1.234.567,89 dollari.",
        ),
        # a sentence's first word is no name: "About" and "The" start quantities
        (
            "About 1.5 million people.",
            "Circa 1.5 milioni di persone.",
            "Circa 1,5 milioni di persone.",
        ),
        # labels keep their dot: a label word, a capitalised name, a number opening the text,
        # one hanging on a word
        ("See Figure 1.1 below.", "Vedi la Figura 1.1 sotto.", "Vedi la Figura 1.1 sotto."),
        (
            "It needs GNOME 3.8 or later.",
            "Richiede GNOME 3.8 o successivo.",
            "Richiede GNOME 3.8 o successivo.",
        ),
        ("It needs Python 3.8 or later.", "Serve Python 3.8.", "Serve Python 3.8."),
        # … but a sentence's first word is a name only when no ordinary word could be there
        ("Add 1.5 cups of flour.", "Aggiungi 1.5 tazze.", "Aggiungi 1,5 tazze."),
        # … or when the translation carries it unchanged before the number, as names are
        ("Python 3.8 is required.", "È richiesto Python 3.8.", "È richiesto Python 3.8."),
        ("Python 3.8 is required.", "Python 3.8 è richiesto.", "Python 3.8 è richiesto."),
        ("Python 3.8 is required.", "È richiesto Python 13.8.", "È richiesto Python 13.8."),
        (
            "About 1.5 million.",
            "Circa 1.5 milioni (About 1.55).",
            "Circa 1,5 milioni (About 1.55).",
        ),
        ("GNOME 3.8 needs 2.5 GB.", "GNOME 3.8 richiede 2.5 GB.", "GNOME 3.8 richiede 2,5 GB."),
        # months, currencies and lowercase label words are no labels
        ("In March 2.5 million voted.", "A marzo 2.5 milioni.", "A marzo 2,5 milioni."),
        ("It costs EUR 2.5 million.", "Costa EUR 2.5 milioni.", "Costa EUR 2,5 milioni."),
        ("The table is 1.5 m long.", "Il tavolo è 1.5 m.", "Il tavolo è 1,5 m."),
        ("Table 1.5 shows it.", "La tabella 1.5 lo mostra.", "La tabella 1.5 lo mostra."),
        # a label is decided number by number; numbers listed after one are labels too
        (
            "It costs 2.5 dollars, see Figure 1.1.",
            "Costa 2.5 dollari, vedi Figura 1.1.",
            "Costa 2,5 dollari, vedi Figura 1.1.",
        ),
        ("It supports Lua 5.2 and 5.1.", "Supporta Lua 5.2 e 5.1.", "Supporta Lua 5.2 e 5.1."),
        # ranges part by part; a British time stays as Italian writes it too
        ("It weighs 1.5-2.5 kg.", "Pesa 1.5-2.5 kg.", "Pesa 1,5-2,5 kg."),
        ("Between 1,000-2,000 came.", "Tra 1,000-2,000.", "Tra 1.000-2.000."),
        (
            "The meeting is at 2.30 pm.",
            "La riunione è alle 2.30 pm.",
            "La riunione è alle 2.30 pm.",
        ),
        # "5.000": five thousand to a European writer of English, five to others: left alone
        ("We have 5.000 employees.", "Abbiamo 5.000 dipendenti.", "Abbiamo 5.000 dipendenti."),
        ("Whistler (1.5 hours away)", "Whistler (1.5 ore)", "Whistler (1,5 ore)"),
        ("It needs GTK+ 3.22 or CUPS < 1.6.", "GTK+ 3.22 o CUPS < 1.6.", "GTK+ 3.22 o CUPS < 1.6."),
        ("It speaks the 1.1 version.", "Parla la versione 1.1.", "Parla la versione 1.1."),
        ("5.4. The network", "5.4. La rete", "5.4. La rete"),
        ("1.2 File Formats", "1.2 Formati di file", "1.2 Formati di file"),
        ("2.5 million people live there.", "2.5 milioni di persone.", "2,5 milioni di persone."),
        ("Install httpd-2.0 first.", "Installa prima httpd-2.0.", "Installa prima httpd-2.0."),
        # a version in the sentence: none of its decimals is a quantity, its groups still are
        (
            "Upgrade 4.6.2 to 4.7 for 1,000 users.",
            "Aggiorna 4.6.2 a 4.7 per 1,000 utenti.",
            "Aggiorna 4.6.2 a 4.7 per 1.000 utenti.",
        ),
        # already Italian, or not a source number: left as the model wrote it
        ("It holds 55,000 barrels.", "Contiene 55.000 barili.", "Contiene 55.000 barili."),
        ("He is 2 metres tall.", "È alto 2.5 metri.", "È alto 2.5 metri."),
        # times, dates, telephone numbers have no decimal point to move
        (
            "At 10:30 on 2017-05-01, call 555-1234.",
            "Alle 10:30 del 2017-05-01, 555-1234.",
            "Alle 10:30 del 2017-05-01, 555-1234.",
        ),
    ],
)
def test_comma_format_rewrites_quantities_only(
    source: str, translation: str, expected: str
) -> None:
    assert localize_numbers(source, translation, "comma", EN_IT) == expected


@pytest.mark.parametrize(
    ("translation", "carried"),
    [
        ("È richiesto Python 3.8.", True),
        ("Python 3.8, poi.", True),
        # the number is read whole, as NUMBER reads it: "3.8-2", "13.8", "3.8.1" are others
        ("È richiesto Python 3.8-2.", False),
        ("È richiesto Python 13.8.", False),
        ("È richiesto Python 3.8.1.", False),
        # the name as written, not the end of a longer word
        ("È richiesto MyPython 3.8.", False),
        ("È richiesto python 3.8.", False),
    ],
)
def test_a_name_is_carried_only_with_the_whole_number(translation: str, carried: bool) -> None:
    assert label_carried("Python ", "3.8", translation) is carried


def test_each_source_number_is_rewritten_as_often_as_the_source_has_it() -> None:
    source = "Between 2.5 and 3.5 litres."
    # the translation repeats 2.5: only the one the source has is the source's quantity
    assert localize_numbers(source, "Tra 2.5 e 3.5 litri, 2.5 in media.", "comma", EN_IT) == (
        "Tra 2,5 e 3,5 litri, 2.5 in media."
    )


def test_point_format_is_the_way_back_and_keep_changes_nothing() -> None:
    source = "Contiene 55.000 barili (2,3 milioni)."
    translation = "It holds 55.000 barrels (2,3 million)."
    assert (
        localize_numbers(source, translation, "point", IT_EN)
        == "It holds 55,000 barrels (2.3 million)."
    )
    assert localize_numbers(source, translation, "keep") == translation
    with pytest.raises(ValueError, match="number format must be one of keep, comma, point"):
        localize_numbers(source, translation, "dot")


def test_the_repair_then_the_format_never_make_a_number_wrong() -> None:
    from attenzione.data.numbers import repair_numbers

    source = "We have 5.000 employees and 2.5 offices."
    # the model wrote 5000 and 2,5: the repair puts back the source's 5.000, which stays
    repaired = repair_numbers(source, "Abbiamo 5000 dipendenti e 2,5 uffici.", EN_IT)
    assert (
        localize_numbers(source, repaired, "comma", EN_IT)
        == "Abbiamo 5.000 dipendenti e 2,5 uffici."
    )


def test_localised_numbers_still_count_as_copied() -> None:
    sources = ["It holds 55,000 barrels (2.3 million gallons)."]
    out = [localize_numbers(sources[0], "Contiene 55,000 barili (2.3 milioni).", "comma", EN_IT)]
    fid = number_fidelity(sources, out)
    assert (fid.kept, fid.total) == (2, 2)


def _pairs(n_swapped: int, n_kept: int) -> list[tuple[str, str]]:
    pairs = [
        (f"We sold {i},500 cars.", f"Abbiamo venduto {i}.500 auto.")
        for i in range(1, 1 + n_swapped)
    ]
    pairs += [(f"Tom has {i},250 books.", f"Tom ha {i},250 libri.") for i in range(1, 1 + n_kept)]
    # English-only forms tell the sources' convention
    return pairs + [
        (f"It cost {i},250,000.50 dollars.", f"Costava {i}.250.000,50 dollari.")
        for i in range(1, 6)
    ]


def test_number_format_of_training_pairs() -> None:
    assert number_format_of(_pairs(30, 5)) == "comma"
    assert number_format_of(_pairs(5, 30)) == "keep"  # the targets mostly copy
    assert number_format_of(_pairs(10, 0)) == "keep"  # too few to say
    assert number_format_of([("No numbers here.", "Niente numeri.")] * 50) == "keep"
    back = [(t, s) for s, t in _pairs(30, 0)]  # Italian → English
    assert number_format_of(back) == "point"


def test_translator_takes_the_format_from_info_json_and_checks_it(tmp_path: Path) -> None:
    from tiny_model import tiny_translator

    tr = tiny_translator()
    assert tr.number_format == "keep"  # a model that never said
    tr.save_pretrained(tmp_path / "m", info={**tr.info, "number_format": "comma"})
    assert Translator.from_pretrained(tmp_path / "m").number_format == "comma"
    info = json.loads((tmp_path / "m" / "info.json").read_text())
    info["number_format"] = "dots"
    (tmp_path / "m" / "info.json").write_text(json.dumps(info))
    with pytest.raises(ValueError, match="info.json: number_format must be one of"):
        Translator.from_pretrained(tmp_path / "m")


shipped = pytest.mark.skipif(
    not (PRETRAINED_DIR / "model.safetensors").is_file(), reason="no shipped model"
)


NUMBER_STEPS = ("numbers", "number-format")


@shipped
def test_shipped_model_writes_italian_numbers_and_the_flags_change_it() -> None:
    tr = Translator.from_pretrained()
    assert tr.number_format == "comma"
    sentence = "The tank can hold 55,000 barrels (2.3 million gallons)."
    out = tr.translate(sentence)[0].text
    assert "55.000" in out and "2,3" in out, out
    unfixed = [n for n in tr.pipeline.names if n not in NUMBER_STEPS]
    raw = tr.translate(sentence, steps=unfixed)[0].text
    # the numbers as the model wrote them (garbled ones put back)
    kept = tr.replace(number_format="keep").translate(sentence)[0].text
    assert number_fidelity([sentence], [kept]).share == 1.0, kept
    runner = CliRunner()
    for flags, want in (
        ([], out),
        (["--number-format", "keep"], kept),
        (["--no-step", "numbers", "--no-step", "number-format"], raw),
    ):
        res = runner.invoke(app, ["translate", *flags, sentence])
        assert res.exit_code == 0, res.output
        assert res.output.strip() == want
    res = runner.invoke(app, ["translate", "--number-format", "dots", sentence])
    assert res.exit_code != 0 and "must be one of model, keep, comma, point" in res.output


@pytest.mark.parametrize(
    ("source", "translation", "restored"),
    [
        ("Price: $19.99", "Prezzo: 19,99", "Prezzo: $19,99"),  # on the source's side
        ("It costs 30 €.", "Costa 30.", "Costa 30 €."),
        ("Room 5 costs $5.", "La stanza 5 costa 5.", "La stanza 5 costa $5."),  # the k-th 5
        ("From US$11,000 to $22,500", "Da US$11.000 a 22.500", "Da US$11.000 a $22.500"),
        ("It costs $25.", "Costa 25$.", "Costa 25$."),  # written with its symbol
        ("It costs $5 million.", "Costa 5 milioni di dollari.", "Costa 5 milioni di dollari."),
        ("It costs 5 €.", "Costa 5 euro.", "Costa 5 euro."),  # named in words
        ("$5 or $5", "5 o 5 o 5", "5 o 5 o 5"),  # not as often as the source: which one?
        ("Pay $5.", "Paga.", "Paga."),
        ("$5 in Europe", "5 in Europa", "$5 in Europa"),  # "Europa" names no currency
        ("Buy 2 $10 tickets.", "Compra 2 biglietti da 10.", "Compra 2 biglietti da $10."),
        ("Tickets cost $5–10.", "I biglietti costano 5–10$.", "I biglietti costano 5–10$."),
        ("$10 to $20", "10 a 20$", "10$ a 20$"),  # the side the translation writes it
        ("It is $30, or 28 euros.", "È 30, o 28 euro.", "È $30, o 28 euro."),  # not its word
        ("Franco paid $20.", "Franco ha pagato 20.", "Franco ha pagato $20."),
    ],
)
def test_a_dropped_currency_symbol_is_put_back_on_its_number(
    source: str, translation: str, restored: str
) -> None:
    assert restore_currency(source, translation, EN_IT) == restored


@shipped
def test_shipped_model_keeps_the_dollar_of_a_price() -> None:
    tr = Translator.from_pretrained()
    out = tr.translate("Price: $19.99")[0].text
    assert "$19,99" in out, out


@pytest.mark.parametrize("command", ["translate", "evaluate", "serve"])
def test_cli_refuses_a_bad_format_and_a_format_without_its_step(
    command: str, tmp_path: Path
) -> None:
    data = tmp_path / "pairs.tsv"
    data.write_text("It holds 55,000 barrels.\tContiene 55.000 barili.\n", encoding="utf-8")
    args = {
        "translate": ["translate", "Hi."],
        "evaluate": ["evaluate", "--data", str(data)],
        "serve": ["serve", "--port", "1"],
    }[command]
    runner = CliRunner()
    res = runner.invoke(app, [*args, "--number-format", "dots"])
    assert res.exit_code == 2 and "--number-format must be one of model, keep, comma, point" in (
        res.output
    )
    res = runner.invoke(app, [*args, "--no-step", "number-format", "--number-format", "comma"])
    assert res.exit_code == 2
    assert "--number-format is the number-format step's" in res.output


def test_training_data_preparation_records_the_targets_format(tmp_path: Path) -> None:
    from attenzione.training.data_prep import prepare
    from attenzione.training.presets import get_preset
    from toy_corpus import toy_pairs, toy_train_config

    corpus = tmp_path / "numbers.tsv"
    pairs = toy_pairs() + _pairs(30, 2)
    corpus.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    cfg = toy_train_config(corpus, tmp_path / "run", vocab_size=80)
    data = prepare(cfg, get_preset(cfg.preset), tmp_path / "run", write=True)
    assert data.number_format == "comma"
    assert any("comma-style" in note for note in data.notes)
