"""``attenzione attention``: heatmaps, an interactive page and one head explained."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from attenzione.cli.common import (
    at_least,
    check_argument_text,
    check_output_dir,
    check_search,
    fail,
    from_option,
    model_option,
    model_route,
    to_option,
    user_errors,
)
from attenzione.cli.threads import apply_threads, threads_option


def attention(
    sentence: str = typer.Argument(
        ..., help="The sentence to look inside (in the model's source language)."
    ),
    model: Path | None = model_option(),
    source: str | None = from_option(),
    target: str | None = to_option(),
    reference: str | None = typer.Option(
        None, "--reference", "-r", help="Teacher-force this translation instead of the model's."
    ),
    out: Path = typer.Option(Path("attention"), "--out", "-o", help="Directory for the files."),
    layer: int | None = typer.Option(
        None,
        "--layer",
        "-l",
        help="Layer of the large heatmaps and of --explain (0-based; default: the last).",
        callback=at_least(0),
    ),
    head: int | None = typer.Option(
        None,
        "--head",
        help="Head of the large heatmaps (default: the mean of the heads) and of --explain "
        "(default: head 0; it explains one head's computation).",
        callback=at_least(0),
    ),
    explain: bool = typer.Option(
        False, "--explain", help="Print one head's computation for one token, with real numbers."
    ),
    kind: str = typer.Option(
        "cross", "--kind", "-k", help="What --explain explains: encoder, decoder or cross."
    ),
    token: int = typer.Option(
        0, "--token", "-t", help="Query token that --explain explains.", callback=at_least(0)
    ),
    beam: int = typer.Option(
        4,
        "--beam",
        "-b",
        "--beam-size",
        help="Beam size for the translation.",
        callback=at_least(1),
    ),
    trace: bool = typer.Option(
        False,
        "--trace",
        help="Record the decoding step by step (each step's most likely pieces, the choice, "
        "the beam) into attention.html's player.",
    ),
    journey: bool = typer.Option(
        False,
        "--journey",
        help="Follow decoder position --token through the whole model, from its embedding to "
        "the softmax, each step checked against the model's own value.",
    ),
    occlusion: bool = typer.Option(
        False,
        "--occlusion",
        help="Remove each source word in turn and measure each target piece's change of "
        "log-probability, beside every head's cross-attention.",
    ),
    masks: str | None = typer.Option(
        None,
        "--masks",
        help="The three masks of a padded batch of the sentence and this shorter one.",
        show_default=False,
    ),
    json_out: bool = typer.Option(
        False,
        "--json",
        help="Print the view asked for as JSON and write no files: --trace, --journey, "
        "--occlusion, --masks, or with --reference the training view.",
    ),
    prefix: str = typer.Option(
        "",
        "--prefix",
        help="Words the translation must begin with; the model continues after them.",
        show_default=False,
    ),
    ablate: list[str] = typer.Option(
        [],
        "--ablate",
        help="Switch a part off: KIND:LAYER.HEAD (KIND encoder, decoder or cross; LAYER, HEAD "
        "a number or *: cross:2.1, encoder:0.*, cross:*) or positions. Repeat or comma-separate.",
        show_default=False,
    ),
    top: int = typer.Option(
        10,
        "--top",
        help="With --trace: the most likely pieces listed a step.",
        callback=at_least(1),
    ),
    png: bool = typer.Option(True, "--png/--no-png", help="Write the PNG heatmaps."),
    threads: int | None = threads_option(),
) -> None:
    """Translate a sentence (or teacher-force --reference) and show every attention map."""
    with user_errors():
        if not sentence.strip():
            fail("the sentence is empty")
        if kind not in ("encoder", "decoder", "cross"):
            fail(f"--kind must be encoder, decoder or cross, not {kind!r}")
        if reference is not None and not reference.strip():
            fail("--reference is empty")
        check_argument_text(
            [sentence, prefix, *ablate] + ([reference] if reference is not None else [])
        )
        views = [
            n
            for n, on in (
                ("--trace", trace),
                ("--journey", journey),
                ("--occlusion", occlusion),
                ("--masks", masks is not None),
            )
            if on
        ]
        if masks is not None and not masks.strip():
            fail("--masks needs the second sentence of the batch")
        if json_out and len(views) > 1:
            fail(f"--json prints one view, not {' and '.join(views)}")
        if json_out and not views and reference is None:
            fail(
                "--json prints a view: add --trace, --journey, --occlusion, --masks or --reference"
            )
        if reference is not None and (trace or prefix.strip() or ablate):
            fail("--trace, --prefix and --ablate decode: they do not go with --reference")
        if journey and explain:
            fail("--journey and --explain each print one computation: choose one")
        if not json_out:
            check_output_dir(out, "--out")
        directories = model_route(model, source, target)
        if len(directories) > 1:  # no model of the pair: through another language
            asked = [*views, *(["--reference"] if reference is not None else [])]
            flags = (("--prefix", prefix.strip()), ("--ablate", ablate), ("--explain", explain))
            asked += [f for f, on in (*flags, ("--json", json_out)) if on]
            if asked:
                legs = " then ".join(d.name for d in directories)
                fail(
                    f"{source}→{target} goes through another language with two models ({legs}): "
                    f"{', '.join(dict.fromkeys(asked))} follow one model: ask for either leg"
                )
            apply_threads(threads)
            _both_legs(directories, sentence, beam, out, png, layer, head)
            return
        directory = directories[0]
        apply_threads(threads)  # before torch is imported: it sets the wait policy
        from attenzione.config import search_config
        from attenzione.translator.translator import Translator
        from attenzione.viz import save_heatmaps, save_html

        if reference is None:  # a beam too wide: one line, before the work
            check_search(directory, search_config(beam))
        translator = Translator.from_pretrained(directory)
        if journey or occlusion or masks is not None or (reference is not None and json_out):
            # a view of its own: printed (as text, or JSON), no files written
            view = _inside_view(
                translator, sentence, reference, beam, token, journey, occlusion, masks, json_out
            )
            if view is not None:
                import json

                typer.echo(json.dumps(view, ensure_ascii=False))
            return
        traced = None
        if trace or prefix.strip() or ablate:
            from attenzione.translator.ablation import parse_ablation

            parse_ablation(ablate, translator.model.config)  # a part it lacks: one line
            translator.prefix_ids(prefix)  # a prefix it cannot write: one line
            made = translator.trace(
                sentence, search=search_config(beam), prefix=prefix, ablate=ablate, top_k=top
            )
            maps = made.maps
            traced = made.to_dict() if trace else None
            if json_out:
                import json

                typer.echo(json.dumps(traced, ensure_ascii=False))
                return
        else:
            maps = translator.attention(sentence, reference, beam=beam)
        explained = None
        if explain:
            from attenzione.translator.explain import explain_head, explanation_data

            ex_layer = layer if layer is not None else maps.layers(kind) - 1
            ex_head = head if head is not None else 0
            ex = explain_head(maps, kind, ex_layer, ex_head, token)
            typer.echo(ex.format())
            typer.echo("")
            explained = explanation_data(maps, kind, ex_layer, ex_head, token)
        out.mkdir(parents=True, exist_ok=True)
        written = []
        if png:
            written += save_heatmaps(maps, out, layer=layer, head=head)
        written.append(save_html(maps, out / "attention.html", explain=explained, trace=traced))
        label = "reference" if maps.teacher_forced else "translation"
        typer.echo(f"{label}: {maps.translation}")
        for path in written:
            typer.echo(f"wrote {path}")
        if reference is not None:  # how training sees the pair
            from attenzione.training.view import teacher_forced

            typer.echo("")
            typer.echo(format_training(teacher_forced(translator, sentence, reference)))


def _both_legs(
    directories: list[Path],
    sentence: str,
    beam: int,
    out: Path,
    png: bool,
    layer: int | None,
    head: int | None,
) -> None:
    """The attention of a pivoted translation: each model's maps in a folder of ``out`` named
    after its pair, the second leg reading what the first wrote."""
    from attenzione.config import search_config
    from attenzione.translator.registry import pair_of
    from attenzione.translator.translator import Translator
    from attenzione.viz import save_heatmaps, save_html

    for directory in directories:
        check_search(directory, search_config(beam))
    text = sentence
    for i, directory in enumerate(directories, start=1):
        translator = Translator.from_pretrained(directory)
        maps = translator.attention(text, None, beam=beam)
        pair = "-".join(pair_of(directory, translator.info))
        folder = out / f"{i}-{pair}"
        folder.mkdir(parents=True, exist_ok=True)
        written = save_heatmaps(maps, folder, layer=layer, head=head) if png else []
        written.append(save_html(maps, folder / "attention.html"))
        typer.echo(f"leg {i} ({pair}): {maps.translation}")
        for path in written:
            typer.echo(f"wrote {path}")
        text = maps.translation
    typer.echo(f"translation: {text}")


def _inside_view(
    translator: Any,
    sentence: str,
    reference: str | None,
    beam: int,
    token: int,
    journey: bool,
    occlusion: bool,
    masks: str | None,
    json_out: bool,
) -> dict[str, Any] | None:
    """The one view asked for (journey, occlusion, masks or the training view): its JSON
    with ``json_out``, else None after printing it as text."""
    if journey:
        made = translator.journey(sentence, token, reference, beam=beam)
        if json_out:
            out: dict[str, Any] = made.to_dict()
            return out
        typer.echo(made.format())
        return None
    if occlusion:
        found: dict[str, Any] = translator.occlusion(sentence, reference, beam=beam)
        if json_out:
            return found
        typer.echo(format_occlusion(found))
        return None
    from attenzione.training.view import padded_batch_masks, teacher_forced

    if masks is not None:
        drawn: dict[str, Any] = padded_batch_masks(translator, sentence, masks)
        if json_out:
            return drawn
        typer.echo(format_masks(drawn))
        return None
    assert reference is not None
    view: dict[str, Any] = teacher_forced(translator, sentence, reference)
    if json_out:
        return view
    typer.echo(format_training(view))
    return None


def format_occlusion(found: dict[str, Any]) -> str:
    """Each source word's largest effect, and each head's agreement with the occlusion."""
    lines = [f"translation: {found['translation']}", "", "removing a word changes log p of:"]
    for j, word in enumerate(found["words"]):
        col = [row[j] for row in found["importance"]]
        best = max(range(len(col)), key=lambda t: col[t]) if col else 0
        lines.append(
            f"  {word!r:<18} most {found['targets'][best]!r} by {col[best]:+.3f}"
            if col
            else f"  {word!r}"
        )
    lines += ["", "cross-attention against occlusion (top1: same most important word):"]
    for h in found.get("heads", []):
        r = "n/a" if h["correlation"] is None else f"{h['correlation']:+.2f}"
        lines.append(f"  layer {h['layer']} head {h['head']}: top1 {h['top1']:.2f}  r {r}")
    return "\n".join(lines)


def format_masks(drawn: dict[str, Any]) -> str:
    """The three masks of the padded batch as grids of 1 (may attend) and · (masked)."""
    lines = []
    for b, text in enumerate(drawn["sentences"]):
        lines.append(f"sentence {b}: {text!r} → {drawn['translations'][b]!r}")
        for name, rows, _cols in (
            ("encoder", "src_tokens", "src_tokens"),
            ("decoder", "tgt_tokens", "tgt_tokens"),
            ("cross", "tgt_tokens", "src_tokens"),
        ):
            lines.append(f"  {name} mask (rows: {rows[:3]} queries, columns: keys)")
            for i, row in enumerate(drawn[name][b]):
                grid = " ".join("1" if x else "·" for x in row)
                lines.append(f"    {drawn[rows][b][i]:>14} {grid}")
    return "\n".join(lines)


def format_training(view: dict[str, Any]) -> str:
    """The training view as a table: each position's pieces, probability and loss."""
    lines = [
        f"teacher forcing {view['reference']!r}: loss {view['loss']:.4f} per token "
        f"(label smoothing {view['smoothing']}), perplexity {view['perplexity']:.2f}; "
        f"step-by-step on the cache differs from the full pass by {view['cached_check']:.1e}",
        f"{'pos':>4} {'fed':>14} {'reference':>14} {'p':>7} {'−log p':>8} {'loss':>7}  greedy",
    ]
    for p in view["positions"]:
        mark = f"  ✗ greedy: {p['greedy']!r}" if p["differs"] else ""
        lines.append(
            f"{p['position']:>4} {p['fed']:>14} {p['reference']:>14} "
            f"{p['probability']:>7.4f} {p['nll']:>8.4f} {p['loss']:>7.4f}{mark}"
        )
    return "\n".join(lines)
