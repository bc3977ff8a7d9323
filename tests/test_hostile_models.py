"""A hostile model is refused in one line, before any work (issue 64, items 8–13).

Each case here is a file an audit wrote by hand into an OPUS-MT directory (before
``attenzione import``) or into a model directory (after it: a directory on disk can be edited
at any time), and what it used to do: loop for ever while loading (a vocabulary id of 1e9
made the search walk a billion pieces), allocate gigabytes before the memory guard ran, print
a traceback, quote Python's or torch's internals, or answer with exit 0 and a wrong result
(a model folder without a pair replaced the shipped English→Italian model). Now each is one
line naming the file and what is wrong with it, and nothing is allocated or written first.
"""

from __future__ import annotations

import datetime
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from typer.testing import CliRunner, Result

from attenzione.cli import app
from attenzione.translator import model_dir
from attenzione.translator.translator import Translator
from tiny_model import tiny_translator

FAR = 1_000_000_000  # an id a billion rows past any model here
DEEP = 100_000  # nested lists: past any parser's recursion


def _one_line_error(res: Result, *needles: str) -> str:
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _one_line(exc: pytest.ExceptionInfo[BaseException], *needles: str) -> str:
    message = str(exc.value)
    assert "\n" not in message, message
    for needle in needles:
        assert needle in message, (needle, message)
    return message


def _copy(source: Path, tmp_path: Path, name: str = "m") -> Path:
    target = tmp_path / name
    shutil.copytree(source, target, symlinks=True)
    return target


def _edit_json(path: Path, change: Callable[[Any], Any]) -> None:
    path.write_text(json.dumps(change(json.loads(path.read_text("utf-8")))), "utf-8")


def _set(**fields: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda data: {**data, **fields}


def _no_server(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    def started(self: object) -> None:  # a serve that got this far would wait for requests
        raise AssertionError("serve started with a hostile model")

    monkeypatch.setattr(uvicorn.Server, "run", started)


def _invoke(command: str, directory: Path, monkeypatch: pytest.MonkeyPatch) -> Result:
    if command == "serve":
        _no_server(monkeypatch)
    args = {
        "translate": ["translate", "--model", str(directory), "the cat"],
        "serve": ["serve", "--model", str(directory)],
        "info": ["info", str(directory)],
    }[command]
    return CliRunner().invoke(app, args)


# ---------------------------------------------------------------------------- the models
@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny model directory of our own (word-level tokenizers)."""
    return tiny_translator().save_pretrained(tmp_path_factory.mktemp("ours") / "tiny")


@pytest.fixture(scope="module")
def opus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small OPUS-MT directory (100 ids, ``<pad>`` 99), as Helsinki-NLP publishes them."""
    pytest.importorskip("transformers")
    pytest.importorskip("sentencepiece")
    from marian_helpers import marian_model, opus_mt_dir

    root = tmp_path_factory.mktemp("hf")
    return opus_mt_dir(root / "opus-mt-en-it", marian_model(spread=False))


@pytest.fixture(scope="module")
def imported(opus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What ``attenzione import`` made of :func:`opus`: Marian tokenizers in a model directory."""
    from marian_helpers import import_with_cli

    out = tmp_path_factory.mktemp("imported") / "en-it"
    import_with_cli(opus, out)
    return out


def _import(hf_dir: Path, tmp_path: Path) -> Result:
    """``attenzione import HF_DIR --out OUT``; a refused import writes nothing."""
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["import", str(hf_dir), "--out", str(out)])
    if res.exit_code != 0:
        assert not out.exists()
    return res


def _hf_copy(opus: Path, tmp_path: Path) -> Path:
    return _copy(opus, tmp_path, "opus-mt-en-it")


def _edit_weights(path: Path, change: Callable[[dict[str, torch.Tensor]], None]) -> None:
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(path))
    change(tensors)
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(path))


# ---------------------------------------------------------------------------- item 8: ids
def _far_piece(top: int) -> Callable[[dict[str, int]], dict[str, int]]:
    return lambda vocab: {**vocab, "<far>": top}


@pytest.mark.parametrize("top", [100, FAR])
def test_a_vocabulary_id_past_the_models_rows_is_refused_at_import(
    opus: Path, tmp_path: Path, top: int
) -> None:
    """``vocab.json`` naming row 100 of a 100-row model (translate then crashed with an
    IndexError) or row 1e9 (translate and serve then looped for ever while loading)."""
    d = _hf_copy(opus, tmp_path)
    _edit_json(d / "vocab.json", _far_piece(top))
    _one_line_error(_import(d, tmp_path), "vocab.json", f"up to id {top}", "100 rows")


def test_an_added_token_past_the_models_rows_is_refused_at_import(
    opus: Path, tmp_path: Path
) -> None:
    d = _hf_copy(opus, tmp_path)
    added = {str(FAR): {"content": "<far>", "special": True}}
    _edit_json(d / "tokenizer_config.json", _set(added_tokens_decoder=added))
    _one_line_error(_import(d, tmp_path), "tokenizer_config.json", f"up to id {FAR}", "100 rows")


@pytest.mark.parametrize("command", ["translate", "serve"])
@pytest.mark.parametrize("top", [100, FAR])
def test_a_vocabulary_edited_after_import_is_refused_at_load(
    imported: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, top: int
) -> None:
    d = _copy(imported, tmp_path)
    _edit_json(d / model_dir.SRC_TOKENIZER / "vocab.json", _far_piece(top))
    line = _one_line_error(_invoke(command, d, monkeypatch), f"up to id {top}")
    assert "src_tokenizer" in line and "src_vocab_size 100" in line


def test_an_added_token_edited_after_import_is_refused_at_load(
    imported: Path, tmp_path: Path
) -> None:
    d = _copy(imported, tmp_path)
    far = {"content": "<far>", "id": FAR, "special": True, "lstrip": False, "rstrip": False}
    path = d / model_dir.TGT_TOKENIZER / "tokenizer.json"
    _edit_json(path, lambda c: {**c, "added_tokens": [*c["added_tokens"], far]})
    with pytest.raises(ValueError) as caught:
        Translator.from_pretrained(d)
    _one_line(caught, "tgt_tokenizer", f"up to id {FAR}", "tgt_vocab_size 100")


def test_a_word_vocabulary_longer_than_the_model_is_refused(ours: Path, tmp_path: Path) -> None:
    d = _copy(ours, tmp_path)
    path = d / model_dir.SRC_TOKENIZER / "tokenizer.json"
    _edit_json(path, lambda c: {**c, "vocab": [*c["vocab"], "extra", "words"]})
    with pytest.raises(ValueError) as caught:
        model_dir.load_tokenizers(d, model_dir.read_config(d))
    _one_line(caught, "src_tokenizer", "src_vocab_size")


# ---------------------------------------------------------------------------- item 9: sizes
HUGE = 10**12  # a table of 1e12 rows or columns: terabytes on any machine


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("max_position_embeddings", HUGE, "this machine has"),
        ("d_model", HUGE, "this machine has"),
        ("max_position_embeddings", -5, "max_position_embeddings must be a positive"),
        ("d_model", 0, "d_model must be a positive"),
        ("vocab_size", -1, "vocab_size must be a positive"),
        ("encoder_layers", 0, "encoder_layers must be a positive"),
        ("pad_token_id", -1, "pad_token_id must be"),
    ],
)
def test_sizes_in_an_hf_config_are_checked_before_anything_is_allocated(
    opus: Path, tmp_path: Path, field: str, value: int, says: str
) -> None:
    d = _hf_copy(opus, tmp_path)
    _edit_json(d / "config.json", _set(**{field: value}))
    _one_line_error(_import(d, tmp_path), "config.json", says)


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("max_len", HUGE, "this machine has"),
        ("d_model", HUGE, "this machine has"),
        ("d_model", True, "d_model must be an int"),
        ("dropout", [1], "dropout must be a number"),
        ("dropout", "abc", "dropout must be a number"),
        ("n_enc_layers", 1.5, "n_enc_layers must be"),
        ("tie_embeddings", "no", "tie_embeddings must be true or false"),
    ],
)
def test_our_config_is_checked_before_anything_is_allocated(
    ours: Path, tmp_path: Path, field: str, value: Any, says: str
) -> None:
    d = _copy(ours, tmp_path)
    _edit_json(d / model_dir.CONFIG_NAME, _set(**{field: value}))
    with pytest.raises(ValueError) as caught:
        model_dir.load_model(d)
    _one_line(caught, "config.json", says)


def test_the_memory_guard_counts_the_position_table() -> None:
    """The sinusoids are a buffer, not a parameter, but they take memory all the same."""
    from attenzione.config import ModelConfig
    from attenzione.weights import memory_needed, parameter_count

    small = ModelConfig(src_vocab_size=10, tgt_vocab_size=10, d_model=8, d_head=2, max_len=16)
    long = small.replace(max_len=16_000)
    assert parameter_count(long) == parameter_count(small)
    assert memory_needed(long) - memory_needed(small) >= 4 * (16_000 - 16) * 8


# ---------------------------------------------------------------------------- item 10
@pytest.mark.parametrize("value", [[1], "abc", True])
def test_a_dropout_that_is_not_a_number_is_refused_at_import(
    opus: Path, tmp_path: Path, value: Any
) -> None:
    d = _hf_copy(opus, tmp_path)
    _edit_json(d / "config.json", _set(dropout=value))
    line = _one_line_error(_import(d, tmp_path), "config.json", "dropout must be a number")
    assert "could not convert" not in line


def test_a_mis_shaped_projection_is_refused_at_import(opus: Path, tmp_path: Path) -> None:
    d = _hf_copy(opus, tmp_path)
    name = "model.encoder.layers.0.self_attn.q_proj.weight"

    def narrow(tensors: dict[str, torch.Tensor]) -> None:
        tensors[name] = tensors[name][:16]

    _edit_weights(d / "model.safetensors", narrow)
    _one_line_error(_import(d, tmp_path), "q_proj.weight", "(16, 32)", "(32, 32)")


DTYPES = [torch.float8_e4m3fn, torch.bool, torch.int64]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_weights_torch_does_not_compute_in_are_refused_at_import(
    opus: Path, tmp_path: Path, dtype: torch.dtype
) -> None:
    d = _hf_copy(opus, tmp_path)

    def cast(tensors: dict[str, torch.Tensor]) -> None:
        for name in tensors:
            tensors[name] = tensors[name].to(dtype)

    _edit_weights(d / "model.safetensors", cast)
    name = str(dtype).removeprefix("torch.")
    _one_line_error(_import(d, tmp_path), "model.safetensors", name, "float32")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_weights_torch_does_not_compute_in_are_refused_at_load(
    ours: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dtype: torch.dtype
) -> None:
    d = _copy(ours, tmp_path)
    tensor = "encoder_layers.0.ffn.linear1.weight"

    def cast(tensors: dict[str, torch.Tensor]) -> None:
        tensors[tensor] = tensors[tensor].to(dtype)

    _edit_weights(d / model_dir.WEIGHTS_NAME, cast)
    name = str(dtype).removeprefix("torch.")
    _one_line_error(_invoke("translate", d, monkeypatch), "model.safetensors", tensor, name)


def test_weights_of_every_computing_precision_still_load(ours: Path, tmp_path: Path) -> None:
    d = _copy(ours, tmp_path)
    for dtype in (torch.float16, torch.bfloat16, torch.float64):
        Translator.from_pretrained(ours).save_pretrained(d, dtype=dtype)
        assert model_dir.load_model(d).config == model_dir.read_config(ours)


@pytest.mark.parametrize("side", ["source", "target"])
def test_an_empty_sentencepiece_model_is_refused_at_import(
    opus: Path, tmp_path: Path, side: str
) -> None:
    d = _hf_copy(opus, tmp_path)
    (d / f"{side}.spm").write_bytes(b"")
    _one_line_error(_import(d, tmp_path), f"{side}.spm", "empty")


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"parameters": "abc"}, "parameters must be"),
        ({"parameters": -1}, "parameters must be"),
        ({"parameters": True}, "parameters must be"),
        ({"corpora": 5}, "corpora must be a list"),
        ({"corpora": [1, 2]}, "corpora must be a list"),
        ({"data": ["x"]}, "data must be"),
    ],
)
def test_info_refuses_an_info_json_of_the_wrong_types(
    ours: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fields: dict[str, Any], says: str
) -> None:
    d = _copy(ours, tmp_path)
    _edit_json(d / model_dir.INFO_NAME, _set(**fields))
    line = _one_line_error(_invoke("info", d, monkeypatch), "info.json", says)
    assert "-0.0M" not in line


def _nest(depth: int) -> str:
    return "[" * depth + "]" * depth


NESTED = [
    (command, member)
    for command in ("info", "translate", "serve")
    for member in (model_dir.INFO_NAME, model_dir.CONFIG_NAME, "src_tokenizer/tokenizer.json")
    if not (command == "info" and member.endswith("tokenizer.json"))  # info reads no tokenizer
]


@pytest.mark.parametrize(("command", "member"), NESTED)
def test_a_deeply_nested_json_file_is_one_line(
    ours: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, member: str
) -> None:
    d = _copy(ours, tmp_path)
    (d / member).write_text('{"x": ' + _nest(DEEP) + "}", "utf-8")
    _one_line_error(_invoke(command, d, monkeypatch), member.rsplit("/", 1)[-1], "nested")


@pytest.mark.parametrize("depth", [DEEP, 900])
def test_a_deeply_nested_vocab_json_is_blamed_at_import(
    opus: Path, tmp_path: Path, depth: int
) -> None:
    """Not "source.spm is not a SentencePiece model": the file that is nested is named."""
    d = _hf_copy(opus, tmp_path)
    (d / "vocab.json").write_text(_nest(depth), "utf-8")
    line = _one_line_error(_import(d, tmp_path), "vocab.json", "nested")
    assert ".spm" not in line


def test_a_json_number_of_thousands_of_digits_is_one_line(
    ours: Path, opus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = _copy(ours, tmp_path)
    text = (d / model_dir.CONFIG_NAME).read_text("utf-8")
    (d / model_dir.CONFIG_NAME).write_text(
        text.replace('"d_model": 16', '"d_model": ' + "9" * 5000)
    )
    line = _one_line_error(_invoke("translate", d, monkeypatch), "config.json", "5000 digits")
    assert "set_int_max_str_digits" not in line
    hf = _hf_copy(opus, tmp_path)
    (hf / "vocab.json").write_text('{"</s>": 0, "<unk>": ' + "1" * 5000 + "}", "utf-8")
    line = _one_line_error(_import(hf, tmp_path), "vocab.json", "5000 digits")
    assert "set_int_max_str_digits" not in line


def test_a_pickle_of_more_than_tensors_is_one_line_without_torchs_advice(
    opus: Path, tmp_path: Path
) -> None:
    d = _hf_copy(opus, tmp_path)
    (d / "model.safetensors").unlink()
    torch.save({"weight": datetime.date(2026, 1, 1)}, d / "pytorch_model.bin")
    line = _one_line_error(_import(d, tmp_path), "pytorch_model.bin")
    assert "weights_only" not in line and "Weights only load failed" not in line


def test_a_training_state_of_more_than_tensors_is_one_line(ours: Path, tmp_path: Path) -> None:
    d = _copy(ours, tmp_path)
    torch.save({"when": datetime.date(2026, 1, 1)}, d / model_dir.STATE_NAME)
    with pytest.raises(ValueError) as caught:
        model_dir.load_state(d)
    message = _one_line(caught, model_dir.STATE_NAME)
    assert "weights_only" not in message


# ---------------------------------------------------------------------------- item 11
def test_a_user_model_whose_pair_cannot_be_told_never_takes_a_shipped_pair(
    ours: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder of ATTENZIONE_MODELS holding a model with no pair in its info.json and a
    name that is none: it used to become "en-it" and replace the shipped model."""
    from attenzione.translator.registry import ENV

    root = tmp_path / "models"
    d = _copy(ours, root, "my-german-model")
    info = json.loads((d / model_dir.INFO_NAME).read_text("utf-8"))
    assert "source_language" not in info and "target_language" not in info
    monkeypatch.setenv(ENV, str(root))
    for args in (["translate", "The cat sleeps."], ["models"]):
        res = CliRunner().invoke(app, args)
        _one_line_error(res, "my-german-model", "source_language")


@pytest.mark.parametrize("value", [0, -3, "abc", 2.5, True])
def test_a_max_src_tokens_that_is_not_a_positive_int_is_refused(
    ours: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: Any
) -> None:
    d = _copy(ours, tmp_path)
    _edit_json(d / model_dir.INFO_NAME, _set(max_src_tokens=value))
    _one_line_error(_invoke("translate", d, monkeypatch), "info.json", "max_src_tokens")


def test_a_training_run_refuses_max_src_tokens_below_one() -> None:
    from attenzione.config import TrainConfig

    with pytest.raises(ValueError, match="max_src_tokens must be >= 1"):
        TrainConfig(data="d.tsv", out="run", max_src_tokens=0)


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"additional_special_tokens": "abc"}, "additional_special_tokens must be a list"),
        ({"extra_special_tokens": "abc"}, "extra_special_tokens must be a list"),
        ({"added_tokens_decoder": {"50": {"content": "", "special": True}}}, "empty"),
        ({"additional_special_tokens": [""]}, "empty"),
    ],
)
def test_special_tokens_that_would_change_the_tokenization_are_refused_at_import(
    opus: Path, tmp_path: Path, fields: dict[str, Any], says: str
) -> None:
    d = _hf_copy(opus, tmp_path)
    _edit_json(d / "tokenizer_config.json", _set(**fields))
    _one_line_error(_import(d, tmp_path), "tokenizer_config.json", says)


def test_an_empty_added_token_is_refused_at_load(imported: Path, tmp_path: Path) -> None:
    d = _copy(imported, tmp_path)
    empty = {"content": "", "id": 50, "special": True, "lstrip": False, "rstrip": False}
    path = d / model_dir.SRC_TOKENIZER / "tokenizer.json"
    _edit_json(path, lambda c: {**c, "added_tokens": [*c["added_tokens"], empty]})
    with pytest.raises(ValueError) as caught:
        Translator.from_pretrained(d)
    _one_line(caught, "tokenizer.json", "empty")


@pytest.mark.parametrize("entry", [{"content": "<x>", "id": "7"}, {"content": "<x>", "idx": 7}])
def test_an_added_token_of_the_wrong_shape_is_one_line(
    imported: Path, tmp_path: Path, entry: dict[str, Any]
) -> None:
    d = _copy(imported, tmp_path)
    path = d / model_dir.SRC_TOKENIZER / "tokenizer.json"
    _edit_json(path, lambda c: {**c, "added_tokens": [*c["added_tokens"], entry]})
    with pytest.raises(ValueError) as caught:
        Translator.from_pretrained(d)
    message = _one_line(caught, "tokenizer.json", "added token")
    assert "__init__" not in message


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_glove_vectors_that_are_not_finite_are_refused(tmp_path: Path, value: str) -> None:
    glove = tmp_path / "g.txt"
    glove.write_text(f"king 0.9 0.8 0.1\nqueen 0.9 {value} 0.8\nman 0.1 0.9 0.1\n", "utf-8")
    res = CliRunner().invoke(app, ["embeddings", "nearest", "king", "--glove", str(glove)])
    _one_line_error(res, f"{glove}:2", "not finite")


# ---------------------------------------------------------------------------- item 12: links
@pytest.mark.parametrize(
    "member", ["vocab.json", "source.spm", "target.spm", "tokenizer_config.json", "config.json"]
)
def test_every_member_of_an_hf_directory_linked_out_of_it_is_refused(
    opus: Path, tmp_path: Path, member: str
) -> None:
    """Replaced by a link to the same file in another copy: a valid file, so only the link
    itself can be the reason to refuse."""
    other = _copy(opus, tmp_path, "other")
    d = _hf_copy(opus, tmp_path)
    (d / member).unlink()
    (d / member).symlink_to(other / member)
    _one_line_error(_import(d, tmp_path), member, "leads outside")


def test_links_inside_an_hf_directory_are_read(opus: Path, tmp_path: Path) -> None:
    d = _hf_copy(opus, tmp_path)
    (d / "files").mkdir()
    (d / "vocab.json").rename(d / "files" / "vocab.json")
    (d / "vocab.json").symlink_to(Path("files") / "vocab.json")
    assert _import(d, tmp_path).exit_code == 0
