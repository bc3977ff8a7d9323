"""A user's own language profiles (attenzione.languages): read from a folder of theirs —
``$ATTENZIONE_LANGUAGES``, else ``$XDG_CONFIG_HOME/attenzione/languages`` — so that an upgrade
of the package never loses them; one there replaces the package's profile of its language, and
a broken one is one line naming the file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from attenzione import languages
from attenzione.cli import app
from attenzione.languages import ENV, clear_cache, known_languages, pair_words, profile

FRENCH = {
    "code": "fr",
    "name": "French",
    "case": "sentence",
    "commas": "pause",
    "compounds": False,
    "title_case_minor_words": [],
    "numbers": {"months": ["janvier", "février"], "labels": ["figure", "version"]},
    "function_words": ["le", "la", "les", "de", "et"],
}


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The user's profile folder, named by the environment variable; the module's caches
    cleared before and after, so that no other test sees these profiles."""
    mine = tmp_path / "languages"
    mine.mkdir()
    monkeypatch.setenv(ENV, str(mine))
    clear_cache()
    yield mine
    monkeypatch.undo()
    clear_cache()


def write(folder: Path, name: str, data: Any) -> Path:
    path = folder / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_a_user_profile_adds_a_language(folder: Path) -> None:
    assert profile("fr") is None
    write(folder, "fr.json", FRENCH)
    clear_cache()
    found = profile("fr-CA")
    assert found is not None and found.name == "French"
    assert "fr" in known_languages() and {"en", "it", "de"} <= set(known_languages())
    # what the steps read of the pair: its words are the user's
    assert {"janvier", "février"} <= pair_words("fr", "en").months
    assert languages.meets(["source-number-labels", "target-sentence-case"], "fr", "en")


def test_a_user_profile_replaces_the_packaged_one(folder: Path) -> None:
    shipped = profile("en")
    assert shipped is not None and "january" in shipped.numbers["months"]
    mine = {**FRENCH, "code": "en", "name": "English (mine)", "numbers": {"months": ["jan"]}}
    write(folder, "en.json", mine)
    clear_cache()
    found = profile("en")
    assert found is not None and found.name == "English (mine)"
    assert found.numbers["months"] == frozenset({"jan"})  # the whole profile, not a merge
    assert profile("it") is not None and profile("it").name == "Italian"  # the others stay
    res = CliRunner().invoke(app, ["info", "en-it", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["profiles"]["en"] == "English (mine)"


def test_the_default_folder_is_under_xdg_config_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    default = tmp_path / "config" / "attenzione" / "languages"
    default.mkdir(parents=True)
    write(default, "fr.json", FRENCH)
    clear_cache()
    try:
        assert languages.user_folders() == [default]
        found = profile("fr")
        assert found is not None and found.name == "French"
        monkeypatch.delenv("XDG_CONFIG_HOME")
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        home = tmp_path / "home"
        assert languages.user_folders() == [home / ".config" / "attenzione" / "languages"]
    finally:
        monkeypatch.undo()
        clear_cache()


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('{"code": "fr", "name": ', "not valid JSON"),
        ({**FRENCH, "case": "upper"}, "'case'"),
        ({**FRENCH, "code": "de"}, "its code is 'de'"),
        (["fr"], "JSON object"),
        ("[" * 100_000, "nested too deeply"),
    ],
)
def test_a_broken_user_profile_is_one_line_naming_the_file(
    folder: Path, content: Any, needle: str
) -> None:
    path = write(folder, "fr.json", content)
    clear_cache()
    with pytest.raises(ValueError) as info:
        profile("fr")
    message = str(info.value)
    assert "\n" not in message and str(path) in message and needle in message, message


def test_a_user_profile_that_is_not_utf8_is_one_line(folder: Path) -> None:
    path = folder / "fr.json"
    path.write_bytes(json.dumps(FRENCH).encode("utf-16"))
    clear_cache()
    with pytest.raises(ValueError) as info:
        profile("fr")
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_a_broken_user_profile_stops_a_command_in_one_line(folder: Path) -> None:
    path = write(folder, "en.json", '{"code": "en",,}')
    clear_cache()
    res = CliRunner().invoke(app, ["info", "en-it"])
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(path) in lines[0], res.output
    assert "Traceback" not in res.output
