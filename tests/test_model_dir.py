"""Model directories: one writer, loads that name every damage, and old directories still load."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch

from attenzione import atomic
from attenzione.config import ModelConfig, TrainConfig
from attenzione.model.transformer import Transformer
from attenzione.translator import model_dir
from attenzione.translator.translator import PRETRAINED_DIR, Translator
from tiny_model import tiny_translator


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("models") / "tiny"
    tiny_translator().save_pretrained(path)
    return path


def _copy(saved: Path, tmp_path: Path) -> Path:
    target = tmp_path / "m"
    shutil.copytree(saved, target)
    return target


def test_the_shipped_model_directory_loads_as_it_is() -> None:
    """The directory written by the earlier code (fp16 weights, old info.json) still loads."""
    assert model_dir.is_complete(PRETRAINED_DIR)
    tr = Translator.from_pretrained()
    assert "Tatoeba" in str(tr.info["attribution"])  # a string, or a list per corpus
    plain = model_dir.load_model(PRETRAINED_DIR)  # the translator's copy has packed layers
    assert model_dir.parameter_count(plain.config) == plain.num_parameters()
    assert tr.model.config == plain.config


def test_the_shipped_model_credits_every_corpus_it_descends_from() -> None:
    """A corpus an earlier model of the chain trained on is still in the weights: info.json
    credits it too (the shipped model started from runs that saw Firefox's strings)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "ship_model", Path(__file__).parents[1] / "tools" / "ship_model.py"
    )
    assert spec is not None and spec.loader is not None
    ship = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ship)
    info = json.loads((PRETRAINED_DIR / "info.json").read_text(encoding="utf-8"))
    chain = {c.name for c in ship.corpora_along_chain(info)}
    assert "firefox.en-it" in chain and "en-it.train" in chain  # the chain is walked
    for name in chain:
        assert ship.ATTRIBUTIONS[name] in info["attribution"], name


@pytest.mark.parametrize(
    "cfg",
    [
        dict(tie_embeddings=True, share_src_tgt_embeddings=True),
        dict(src_embed_dim=10, norm="pre", positions="learned"),
        dict(),
        dict(output_bias=True, tie_embeddings=True, share_src_tgt_embeddings=True),
        dict(output_bias=True),
    ],
)
def test_parameter_count_is_exact(cfg: dict[str, object]) -> None:
    mc = ModelConfig(src_vocab_size=40, tgt_vocab_size=40, d_model=24, n_heads=3, d_head=8, **cfg)  # type: ignore[arg-type]
    assert model_dir.parameter_count(mc) == Transformer(mc).num_parameters()


def test_a_config_no_machine_can_hold_is_refused_with_the_figure(
    saved: Path, tmp_path: Path
) -> None:
    d = _copy(saved, tmp_path)
    cfg = json.loads((d / "config.json").read_text())
    cfg["d_model"] = 1_000_000_000
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"need \d+\.\d TB.*this machine has"):
        model_dir.load_model(d)


@pytest.mark.parametrize("damage", ["empty", "truncated", "random"])
def test_damaged_weights_are_named(saved: Path, tmp_path: Path, damage: str) -> None:
    d = _copy(saved, tmp_path)
    weights = d / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(
        {"empty": b"", "truncated": data[: len(data) // 2], "random": os.urandom(4096)}[damage]
    )
    with pytest.raises(ValueError, match="model.safetensors"):
        Translator.from_pretrained(d)


def test_weights_that_disagree_with_the_config_are_named(saved: Path, tmp_path: Path) -> None:
    d = _copy(saved, tmp_path)
    cfg = json.loads((d / "config.json").read_text())
    cfg["d_ff"] = 48  # the saved FFN weights are 32 wide
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"does not match config.json: shapes .*ffn"):
        model_dir.load_model(d)


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"d_model": "wide"}'])
def test_a_garbage_config_is_named(saved: Path, tmp_path: Path, text: str) -> None:
    d = _copy(saved, tmp_path)
    (d / "config.json").write_text(text)
    with pytest.raises(ValueError, match="config.json"):
        model_dir.load_model(d)


@pytest.mark.parametrize(
    "text",
    ["\x00\x01 garbage", '{"type": "word", "vocab": 7}', '{"type": "word", "vocab": ["a"]}'],
)
def test_garbage_tokenizer_files_are_named(saved: Path, tmp_path: Path, text: str) -> None:
    d = _copy(saved, tmp_path)
    (d / "src_tokenizer" / "tokenizer.json").write_text(text)
    with pytest.raises(ValueError, match="tokenizer.json"):
        Translator.from_pretrained(d)


def test_a_garbage_sentencepiece_model_is_named(tmp_path: Path) -> None:
    d = tmp_path / "tok"
    d.mkdir()
    (d / "tokenizer.json").write_text('{"type": "sentencepiece", "model": "spm.model"}')
    (d / "spm.model").write_bytes(os.urandom(300))
    from attenzione.data import load_tokenizer

    with pytest.raises(ValueError, match="spm.model"):
        load_tokenizer(d)


@pytest.mark.parametrize("name", ["../../../../etc/passwd", "/etc/passwd", "sub/../../x", ".."])
def test_a_tokenizer_cannot_read_outside_its_directory(tmp_path: Path, name: str) -> None:
    from attenzione.data import load_tokenizer

    d = tmp_path / "tok"
    d.mkdir()
    (d / "tokenizer.json").write_text(json.dumps({"type": "sentencepiece", "model": name}))
    with pytest.raises(ValueError, match="'model'"):
        load_tokenizer(d)


def test_a_symlink_out_of_the_tokenizer_directory_is_refused(tmp_path: Path) -> None:
    from attenzione.data import load_tokenizer

    d = tmp_path / "tok"
    d.mkdir()
    (tmp_path / "secret").write_text("x")
    (d / "spm.model").symlink_to(tmp_path / "secret")
    (d / "tokenizer.json").write_text(json.dumps({"type": "sentencepiece", "model": "spm.model"}))
    with pytest.raises(ValueError, match="leads outside"):
        load_tokenizer(d)


def test_special_ids_that_disagree_with_the_tokenizers_are_refused(
    saved: Path, tmp_path: Path
) -> None:
    d = _copy(saved, tmp_path)
    cfg = json.loads((d / "config.json").read_text())
    cfg["bos_id"], cfg["eos_id"] = 2, 1
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="special tokens"):
        Translator.from_pretrained(d)


def test_a_killed_trainer_save_never_leaves_an_unresumable_last(
    saved: Path, tmp_path: Path
) -> None:
    """The old writer renamed last/ into place and wrote train_config.json afterwards: a kill
    in between left a last/ that --resume could not read. Now every instant has a resumable
    checkpoint (kill the writer at each of its steps)."""
    tr = Translator.from_pretrained(saved)
    plain = model_dir.load_model(saved)  # a trainer's model: plain layers (forks safely)
    state = {"progress": {"step": 1}}
    train_cfg = TrainConfig(data="x.tsv", out=str(tmp_path)).to_json()

    def save(version: int, on_step: object = None) -> None:
        model_dir.write_model_dir(
            tmp_path / "last",
            plain,
            tr.src_tokenizer,
            tr.tgt_tokenizer,
            info={"step": version},
            state=state,
            extra_files={model_dir.TRAIN_CONFIG_NAME: train_cfg},
            on_step=on_step,  # type: ignore[arg-type]
        )

    save(1)
    steps: list[str] = []
    save(2, steps.append)
    assert "renamed" in steps
    for at in steps:
        pid = os.fork()
        if pid == 0:
            try:
                save(3, lambda name, at=at: os._exit(0) if name == at else None)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        found = model_dir.find_model_dir(tmp_path / "last", resumable=True)
        assert found is not None, at
        TrainConfig.load(found / model_dir.TRAIN_CONFIG_NAME)
        model_dir.load_state(found)
        Translator.from_pretrained(found)


def test_a_directory_the_old_writer_left_half_swapped_is_resumed_from_its_twin(
    saved: Path, tmp_path: Path
) -> None:
    """Hand-built state of the old writer killed after its rename: last/ without
    train_config.json, last.old complete. The complete one is used and the next save works."""
    old = atomic.old_twin(tmp_path / "last")
    shutil.copytree(saved, old)
    (old / model_dir.TRAIN_CONFIG_NAME).write_text(TrainConfig(data="x", out="y").to_json())
    torch.save({"progress": {"step": 3}}, old / model_dir.STATE_NAME)
    shutil.copytree(saved, tmp_path / "last")
    torch.save({"progress": {"step": 4}}, tmp_path / "last" / model_dir.STATE_NAME)
    assert model_dir.find_model_dir(tmp_path / "last", resumable=True) == old
    tr = Translator.from_pretrained(saved)
    model_dir.write_model_dir(
        tmp_path / "last",
        tr.model,
        tr.src_tokenizer,
        tr.tgt_tokenizer,
        state={"progress": {"step": 5}},
        extra_files={model_dir.TRAIN_CONFIG_NAME: TrainConfig(data="x", out="y").to_json()},
    )
    assert model_dir.find_model_dir(tmp_path / "last", resumable=True) == tmp_path / "last"
    assert model_dir.load_state(tmp_path / "last")["progress"]["step"] == 5
    assert not old.exists()
