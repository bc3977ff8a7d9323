"""Damaged and linked model directories are refused at load, in one line that names the problem
and never a file's content (issue 53, items 4 and 7).

A NaN or an infinity in the weights used to load and translate garbage ("sviluppo sviluppo …")
with exit 0, and ``serve`` started and answered ``scores: true`` with a 500. Files of a model
directory that are symbolic links leading out of it used to be read wherever they pointed, and
a word list's error quoted its first line, so a link to any file printed that file's first line.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner, Result

from attenzione.cli import app
from attenzione.translator import model_dir
from attenzione.translator.translator import Translator
from tiny_model import tiny_translator

SECRET = "hunter2 is the password"


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("models") / "tiny"
    # a word list too: its errors are checked below
    tr = tiny_translator().replace(known_words=["il", "gatto"])
    tr.save_pretrained(path)
    assert (path / model_dir.WORDS_NAME).is_file()
    return path


def _copy(saved: Path, tmp_path: Path, name: str = "m") -> Path:
    target = tmp_path / name
    shutil.copytree(saved, target)
    return target


def _one_line_error(res: Result, *needles: str) -> str:
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


# ---------------------------------------------------------------- item 4: non-finite weights
TENSOR = "decoder_layers.0.ffn.linear1.weight"


def _poison(directory: Path, value: float, tensor: str = TENSOR, everywhere: bool = False) -> None:
    """Write ``value`` into one element (or all) of ``tensor`` of ``directory``'s weights."""
    path = directory / model_dir.WEIGHTS_NAME
    tensors = model_dir.load_weights_file(path)
    assert tensor in tensors, sorted(tensors)
    t = tensors[tensor].clone()
    if everywhere:
        t.fill_(value)
    else:
        t.view(-1)[3] = value
    tensors[tensor] = t
    model_dir.save_tensors(path, tensors)


@pytest.mark.parametrize(
    ("value", "word"), [(math.nan, "NaN"), (math.inf, "inf"), (-math.inf, "-inf")]
)
def test_weights_holding_a_non_finite_value_are_refused_naming_the_tensor(
    saved: Path, tmp_path: Path, value: float, word: str
) -> None:
    d = _copy(saved, tmp_path)
    _poison(d, value)
    with pytest.raises(ValueError, match=rf"model\.safetensors: tensor {TENSOR} holds {word} "):
        Translator.from_pretrained(d)
    with pytest.raises(ValueError, match="the file is damaged"):
        model_dir.load_model(d)


def test_weights_stored_in_half_precision_are_checked_too(saved: Path, tmp_path: Path) -> None:
    d = tmp_path / "half"
    Translator.from_pretrained(saved).save_pretrained(d, dtype=torch.float16)
    _poison(d, math.nan, "generator.weight")
    with pytest.raises(ValueError, match="tensor generator.weight holds NaN"):
        Translator.from_pretrained(d)


def test_large_finite_weights_still_load(saved: Path, tmp_path: Path) -> None:
    """The check sums each tensor first (cheap) and looks closer only when the sum is not
    finite: a sum that overflows on finite values is not a damaged file."""
    d = _copy(saved, tmp_path)
    _poison(d, 3e38, everywhere=True)  # finite, but its sum overflows float32
    model = model_dir.load_model(d)
    assert torch.isfinite(model.state_dict()[TENSOR]).all()


@pytest.mark.parametrize("command", ["translate", "evaluate", "serve"])
def test_every_command_refuses_a_model_with_nan_weights_in_one_line(
    saved: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    import uvicorn

    def started(self: object) -> None:  # a serve that got this far would wait for requests
        raise AssertionError("serve started with a damaged model")

    monkeypatch.setattr(uvicorn.Server, "run", started)
    d = _copy(saved, tmp_path)
    _poison(d, math.nan)
    data = tmp_path / "dev.tsv"
    data.write_text("the cat\til gatto\n", encoding="utf-8")
    args = {
        "translate": ["translate", "--model", str(d), "the cat"],
        "evaluate": ["evaluate", "--model", str(d), "--data", str(data)],
        "serve": ["serve", "--model", str(d)],
    }[command]
    res = CliRunner().invoke(app, args)
    _one_line_error(res, TENSOR, "NaN", "damaged")


# ---------------------------------------------------------------- item 7: symbolic links
MEMBERS = [
    model_dir.CONFIG_NAME,
    model_dir.WEIGHTS_NAME,
    model_dir.SRC_TOKENIZER,  # a whole directory
    f"{model_dir.TGT_TOKENIZER}/tokenizer.json",
    model_dir.INFO_NAME,
    model_dir.WORDS_NAME,
]


@pytest.mark.parametrize("member", MEMBERS)
def test_a_member_linked_out_of_the_model_directory_is_refused(
    saved: Path, tmp_path: Path, member: str
) -> None:
    """Each file (or folder) is replaced by a link to the same thing in another model
    directory: a valid file, so only the link itself can be the reason to refuse."""
    other = _copy(saved, tmp_path, "other")
    d = _copy(saved, tmp_path)
    target = d / member
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    target.symlink_to(other / member)
    with pytest.raises(ValueError, match="leads outside"):
        Translator.from_pretrained(d)


def test_a_loop_of_links_is_a_damaged_directory(saved: Path, tmp_path: Path) -> None:
    d = _copy(saved, tmp_path)
    (d / model_dir.WEIGHTS_NAME).unlink()
    (d / model_dir.WEIGHTS_NAME).symlink_to(model_dir.WEIGHTS_NAME)  # itself
    with pytest.raises(ValueError, match="loop of symbolic links"):
        Translator.from_pretrained(d)


def test_the_command_refuses_linked_weights_in_one_line(saved: Path, tmp_path: Path) -> None:
    other = _copy(saved, tmp_path, "other")
    d = _copy(saved, tmp_path)
    (d / model_dir.WEIGHTS_NAME).unlink()
    (d / model_dir.WEIGHTS_NAME).symlink_to(other / model_dir.WEIGHTS_NAME)
    res = CliRunner().invoke(app, ["translate", "--model", str(d), "the cat"])
    _one_line_error(res, model_dir.WEIGHTS_NAME, "leads outside")


def test_a_linked_model_directory_and_links_inside_it_load(saved: Path, tmp_path: Path) -> None:
    """``~/models/current -> v3`` is how people switch versions: the directory's own path is
    resolved once, and a link that stays inside it (to a file of the same directory) is no
    escape."""
    v3 = _copy(saved, tmp_path, "v3")
    (v3 / "weights").mkdir()
    (v3 / model_dir.WEIGHTS_NAME).rename(v3 / "weights" / "step-9.safetensors")
    (v3 / model_dir.WEIGHTS_NAME).symlink_to(Path("weights") / "step-9.safetensors")
    current = tmp_path / "current"
    current.symlink_to(v3, target_is_directory=True)
    expected = Translator.from_pretrained(saved).translate("the cat")
    assert Translator.from_pretrained(current).translate("the cat") == expected


def test_a_word_list_linked_to_another_file_does_not_print_it(saved: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET + "\n", encoding="utf-8")
    d = _copy(saved, tmp_path)
    (d / model_dir.WORDS_NAME).unlink()
    (d / model_dir.WORDS_NAME).symlink_to(secret)
    res = CliRunner().invoke(app, ["translate", "--model", str(d), "the cat"])
    line = _one_line_error(res, model_dir.WORDS_NAME)
    assert "hunter2" not in res.output and "password" not in line


@pytest.mark.parametrize("text", [SECRET + "\n", "il\nGatto Nero\n", "il\n\ngatto\n"])
def test_a_bad_word_list_is_named_by_line_without_its_content(
    saved: Path, tmp_path: Path, text: str
) -> None:
    d = _copy(saved, tmp_path)
    (d / model_dir.WORDS_NAME).write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=r"tgt_words\.txt, line \d") as info:
        model_dir.read_words(d)
    message = str(info.value)
    for word in ("hunter2", "password", "Gatto", "Nero"):
        assert word not in message, message


def test_the_registry_does_not_read_a_linked_info_file(
    saved: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's folder of models is listed by ``attenzione models``: an ``info.json`` linked
    from elsewhere does not say which pair a directory translates (its name does)."""
    from attenzione.translator.registry import ENV, installed

    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text('{"source_language": "fr", "target_language": "de"}', encoding="utf-8")
    root = tmp_path / "models"
    d = _copy(saved, root, "es-pt")
    (d / model_dir.INFO_NAME).unlink()
    (d / model_dir.INFO_NAME).symlink_to(elsewhere)
    monkeypatch.setenv(ENV, str(root))
    pairs = {m.pair: m.path for m in installed()}
    assert pairs.get("es-pt") == d and "fr-de" not in pairs
