"""``export(model_dir, fmt, out)``: a model directory of ours, written in another toolkit's
format by its registered exporter (:mod:`attenzione.interop`)."""

from __future__ import annotations

from pathlib import Path

from attenzione.interop import export as interop_export
from attenzione.interop.common import ExportRefused as ExportRefused
from attenzione.translator import model_dir
from attenzione.translator.registry import pair_of


def export(model: str | Path, fmt: str, out: str | Path) -> Path:
    """Write the model directory ``model`` to ``out`` in format ``fmt`` (a registered
    exporter: ``huggingface``, ``ctranslate2``), atomically; an ``out`` that exists must be
    empty or an earlier export of the format (checked before the model is read)."""
    source = Path(model)
    interop_export.check_target(fmt, out, source)
    net = model_dir.load_model(source).eval()
    src_tok, tgt_tok = model_dir.load_tokenizers(source, net.config)
    info = model_dir.read_info(source)
    info["source_language"], info["target_language"] = pair_of(source, info)
    return interop_export.write(fmt, out, net, src_tok, tgt_tok, info, source=source)
