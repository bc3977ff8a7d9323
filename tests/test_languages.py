"""Language profiles (attenzione.languages): each loads, the steps and terms declare needs the
registry knows, and what a step does follows the pair's profiles, not a language named in code."""

from __future__ import annotations

import pytest

from attenzione.data.cleaning import reads_as
from attenzione.data.currency import restore_currency
from attenzione.data.numbers import NO_WORDS, localize_numbers, repair_numbers
from attenzione.languages import (
    REQUIREMENTS,
    Profile,
    known_languages,
    meets,
    minor_words,
    pair_words,
    profile,
)
from attenzione.pipeline import STEPS
from attenzione.search.registry import REGISTRY


def test_the_profiles_we_ship() -> None:
    assert {"en", "it", "de"} <= set(known_languages())


@pytest.mark.parametrize("code", known_languages())
def test_each_profile_loads(code: str) -> None:
    p = profile(code)
    assert p is not None and p.code == code and p.name
    assert len(p.function_words) >= 20  # enough for the untranslated filter to tell it apart
    assert p.numbers["months"] and len(p.numbers["months"]) >= 12
    assert profile(code.upper()) is p  # cached, case ignored


def test_a_region_or_script_subtag_reads_the_language() -> None:
    assert profile("en-GB") is profile("en") is profile("en_US")
    assert profile("xx") is None and profile("") is None and profile(None) is None


def test_a_bad_profile_is_one_line_naming_the_field() -> None:
    good = {"code": "zz", "name": "Z", "case": "sentence", "commas": "pause", "compounds": False}
    assert Profile.from_dict(good, "zz.json").code == "zz"
    for broken, field in [
        ({**good, "case": "upper"}, "'case'"),
        ({**good, "compounds": "no"}, "'compounds'"),
        ({**good, "function_words": "the a"}, "'function_words'"),
        ({**good, "numbers": {"labels": ["x"], "units": []}}, "'numbers'"),
        ({**good, "title_case_minor_words": [""]}, "'title_case_minor_words'"),
        ({k: v for k, v in good.items() if k != "name"}, "'name'"),
    ]:
        with pytest.raises(ValueError, match=field) as info:
            Profile.from_dict(broken, "zz.json")
        assert "\n" not in str(info.value) and "zz.json" in str(info.value)
    with pytest.raises(ValueError, match="JSON object"):
        Profile.from_dict(["en"], "zz.json")  # type: ignore[arg-type]


def test_every_declared_need_is_a_requirement_there_is() -> None:
    declared = [n for s in STEPS for n in s.needs] + [n for t in REGISTRY.values() for n in t.needs]
    assert declared and set(declared) <= set(REQUIREMENTS)
    with pytest.raises(KeyError):
        meets(["no-such-need"], "en", "it")


def test_number_labels_are_the_pairs_languages() -> None:
    """A label ("Figure 1.1", "Abbildung 1.1") is no quantity in the language whose profile
    names it; with no profile there is no label word, and the decimal is rewritten."""
    en = "See Figure 1.1: it holds 2.5 litres."
    assert localize_numbers(
        en, "Vedi Figure 1.1: contiene 2.5 litri.", "comma", pair_words("en", "it")
    ) == ("Vedi Figure 1.1: contiene 2,5 litri.")
    de, en = "Abbildung 1.5 zeigt 2.5 Liter.", "Figure 1.5 shows 2.5 litres."
    assert localize_numbers(de, en, "comma", pair_words("de", "en")) == (
        "Figure 1.5 shows 2,5 litres."
    )
    assert localize_numbers(de, en, "comma", NO_WORDS) == "Figure 1,5 shows 2,5 litres."


def test_currency_words_and_numeral_suffixes_are_the_pairs() -> None:
    # a currency named in the target language's words: the symbol is not put back
    assert restore_currency("It costs $5.", "Es kostet 5 Dollar.", pair_words("en", "de")) == (
        "Es kostet 5 Dollar."
    )
    assert (
        restore_currency("It costs $5.", "Es kostet 5 Dollar.", NO_WORDS) == "Es kostet $5 Dollar."
    )
    # Italian writes "18enne" on the digits; no other profile has that suffix
    assert repair_numbers("An 18 year old.", "Un 18enne.", pair_words("en", "it")) == "Un 18enne."
    assert repair_numbers("An 18 year old.", "Un 18enne.", NO_WORDS) == "Un 18 enne."


def test_minor_words_and_function_words_come_from_the_profiles() -> None:
    assert "the" in minor_words("en", "de") and minor_words("de", "xx") == frozenset()
    assert reads_as("der Hund ist nicht im Haus", "de", "en")
    assert not reads_as("the dog is not in the house", "de", "en")
    assert not reads_as("der Hund ist nicht im Haus", "de", "xx")  # no profile: no judgement
