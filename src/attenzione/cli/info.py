"""``attenzione info MODEL``: what a user asks of a model before trusting it — its pair, size,
the text steps and ranking terms it applies, the data it was trained on, its recorded scores.

Reads ``config.json``, ``info.json`` and (in a run's checkpoints) ``train_config.json``; never
the weights. The steps and terms are those a :class:`~attenzione.translator.translator.
Translator` of the directory would use: the ones ``info.json`` records, else its pair's
default (:func:`attenzione.pipeline.pairs.built_pipeline`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import typer

from attenzione.cli.common import model_path, user_errors

_PAIR = re.compile(r"([a-z]{2,3})-([a-z]{2,3})")


def _directory(model: str | None) -> Path:
    """The model directory ``model`` names: a directory, or an installed pair (``en-it``)."""
    from attenzione.translator import model_dir
    from attenzione.translator.registry import find

    if model is None:
        return find().path
    path = Path(model)
    pair = _PAIR.fullmatch(model.strip().lower())
    if not path.exists() and pair:
        return find(pair.group(1), pair.group(2)).path
    path = model_path(path, None, None)  # a training run's directory: one line naming best/
    if not path.exists():
        raise FileNotFoundError(f"model directory {path} does not exist")
    if not path.is_dir():
        raise NotADirectoryError(f"{path} is a file, not a model directory")
    for name in model_dir.MODEL_FILES:
        if not model_dir.member(path, name).is_file():
            raise FileNotFoundError(f"{path / name} not found: not a model directory")
    return path


def describe(directory: Path) -> dict[str, Any]:
    """What ``attenzione info --json`` prints of the model directory ``directory``."""
    from attenzione.data.jsonfile import read_json
    from attenzione.pipeline.pairs import built_pipeline
    from attenzione.translator import model_dir
    from attenzione.translator.registry import pair_of

    cfg = model_dir.read_config(directory)
    info = model_dir.read_info(directory)
    source, target = pair_of(directory, info)
    try:
        pipeline, weights = built_pipeline(info)
    except ValueError as exc:
        raise ValueError(f"{directory / model_dir.INFO_NAME}: {exc}") from None
    steps = list(pipeline.names)
    train_cfg: dict[str, Any] = {}
    path = model_dir.member(directory, model_dir.TRAIN_CONFIG_NAME)
    if path.is_file():
        loaded = read_json(path)
        train_cfg = loaded if isinstance(loaded, dict) else {}
        extra = train_cfg.get("extra_data") or []
        if not isinstance(extra, list) or not all(isinstance(e, str) for e in extra):
            raise ValueError(f"{path}: extra_data must be a list of corpora (strings)")
    # read_info checked the types of what info.json records
    data = info.get("corpora") or ([info["data"]] if info.get("data") else [])
    if not data and train_cfg.get("data"):
        data = [str(train_cfg["data"]), *train_cfg.get("extra_data", [])]
    scores = {k: v for k, v in info.items() if (k.startswith(("dev_", "test_")) and v is not None)}
    return {
        "path": str(directory),
        "source_language": source,
        "target_language": target,
        "parameters": info.get("parameters") or model_dir.parameter_count(cfg),
        "d_model": cfg.d_model,
        "heads": cfg.n_heads,
        "d_ff": cfg.d_ff,
        "encoder_layers": cfg.n_enc_layers,
        "decoder_layers": cfg.n_dec_layers,
        "src_vocab_size": cfg.src_vocab_size,
        "tgt_vocab_size": cfg.tgt_vocab_size,
        "bytes": sum(p.stat().st_size for p in directory.rglob("*") if p.is_file()),
        # the language profile each side has (None: that side's language has none, and the
        # steps and terms that need one are off by default)
        "profiles": {lang: _profile_name(lang) for lang in (source, target)},
        "steps": steps,
        "terms": {name: w for name, w in weights.items() if w > 0},
        "pipeline_recorded": bool(info.get("pipeline")),
        "preset": info.get("preset", train_cfg.get("preset")),
        "step": info.get("step"),
        "train_hours": info.get("train_hours"),
        "data": data,
        "attribution": info.get("attribution"),
        "scores": scores,
    }


def _profile_name(code: Any) -> str | None:
    from attenzione.languages import profile

    found = profile(code) if isinstance(code, str) else None
    return found.name if found else None


def _score(value: Any) -> str:
    """A recorded score as one short phrase."""
    if isinstance(value, dict) and "bleu" in value:
        extra = f", {value['sentences']} sentences" if "sentences" in value else ""
        beam = f", beam {value['beam']}" if "beam" in value else ""
        return f"BLEU {value['bleu']} chrF {value.get('chrf', '-')}{extra}{beam}"
    return str(value) if not isinstance(value, dict | list) else json.dumps(value)


def info(
    model: str = typer.Argument(
        None, help="A model directory, or an installed pair (en-it). Default: en-it."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print it as JSON."),
) -> None:
    """Show a model's pair, size, text steps and ranking terms, training data and scores.

    Reads the directory's config and info.json only (the weights are not loaded).
    """
    with user_errors():
        facts = describe(_directory(model))
    if as_json:
        typer.echo(json.dumps(facts, indent=2, ensure_ascii=False))
        return
    rows = [
        ("model", facts["path"]),
        ("pair", f"{facts['source_language']} → {facts['target_language']}"),
        (
            "size",
            f"{facts['parameters'] / 1e6:.1f}M parameters, {facts['bytes'] / 1e6:.1f} MB; "
            f"d_model {facts['d_model']}, {facts['heads']} heads, d_ff {facts['d_ff']}, "
            f"{facts['encoder_layers']}+{facts['decoder_layers']} layers; vocabularies "
            f"{facts['src_vocab_size']} source, {facts['tgt_vocab_size']} target",
        ),
        (
            "profiles",
            ", ".join(
                f"{k} {v or '(none: generic steps only)'}" for k, v in facts["profiles"].items()
            ),
        ),
        (
            "steps",
            (", ".join(facts["steps"]) or "none (the model alone)")
            + ("" if facts["pipeline_recorded"] else " (not recorded: the pair's default)"),
        ),
        ("terms", ", ".join(f"{n} {w:g}" for n, w in facts["terms"].items()) or "none"),
    ]
    trained = [f"{k} {facts[k]}" for k in ("preset", "step", "train_hours") if facts[k] is not None]
    if trained:
        rows.append(("trained", ", ".join(trained).replace("train_hours", "hours")))
    rows += [("data" if i == 0 else "", d) for i, d in enumerate(facts["data"])]
    rows += [(name, _score(v)) for name, v in facts["scores"].items()]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        typer.echo(f"{key.ljust(width)}  {value}")
    if facts["attribution"]:
        typer.echo("\nattribution:\n" + str(facts["attribution"]))
