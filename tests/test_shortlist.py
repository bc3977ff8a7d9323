"""The vocabulary shortlist: counted from pairs, exact where it says it is, saved with a model."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attenzione.config import DecodeConfig
from attenzione.model.fast.precision import for_inference
from attenzione.model.transformer import Transformer
from attenzione.search.decoding import generate
from attenzione.search.shortlist import Counts, Shortlist, build, output_head, output_layer
from attenzione.translator import model_dir
from attenzione.translator.translator import Translator
from tiny_model import small_model, tiny_translator

V = 90


def _model(pack: bool, tie: bool = False) -> Transformer:
    return for_inference(small_model(V, tie=tie), "fp32", pack=pack)


def _sources() -> torch.Tensor:
    g = torch.Generator().manual_seed(4)
    src = torch.randint(4, V, (5, 9), generator=g)
    src[:, -1] = 2
    src[1, 6:] = 0
    src[1, 5] = 2
    return src


def test_counting_finds_the_pieces_that_go_together() -> None:
    counts = Counts(V, V)
    pairs = []
    for i in range(40):
        # source piece 10 is always rendered by 20; 11 by 21; 30 is a frequent filler
        src = [10, 50 + i % 7] if i % 2 else [11, 50 + i % 5]
        tgt = [20, 30, 60 + i % 3] if i % 2 else [21, 30, 30]
        pairs.append((src, tgt))
    counts.add(pairs)
    sl = build(counts, k=3, n_frequent=2, min_count=2, skip=(0, 1))
    assert int(sl.table[10, 0]) == 20 and int(sl.table[11, 0]) == 21
    assert 21 not in sl.table[10].tolist()  # never seen with 10
    assert len(sl.frequent) == 2 and 30 in sl.frequent.tolist()  # the most frequent piece
    assert int(sl.table[3].max()) == -1  # a piece never seen has no translations
    listed = set(sl.table.flatten().tolist()) | set(sl.frequent.tolist())
    assert not {0, 1} & listed  # padding and <bos> are never listed


def test_ids_for_a_batch_are_the_union_sorted() -> None:
    table = torch.full((V, 2), -1, dtype=torch.int32)
    table[5] = torch.tensor([40, 41])
    table[6, 0] = 42
    sl = Shortlist(frequent=torch.tensor([7, 8], dtype=torch.int32), table=table)
    src = torch.tensor([[5, 6, 2], [6, 2, 0]])
    assert sl.ids_for(src, always=(2, 3)).tolist() == [2, 3, 7, 8, 40, 41, 42]
    assert sl.ids_for(src, copy_source=True).tolist() == [0, 2, 5, 6, 7, 8, 40, 41, 42]


@pytest.mark.parametrize("tie", [False, True])
@pytest.mark.parametrize("pack", [False, True])
def test_the_restricted_output_layer_gives_the_full_layers_logits(pack: bool, tie: bool) -> None:
    model = _model(pack, tie)
    ids = torch.tensor([2, 9, 17, 33, 70])
    x = torch.randn(3, 1, 64)
    with torch.inference_mode():
        full = model.generator(x)
        assert torch.allclose(output_layer(model, ids)(x), full[..., ids], atol=1e-5)


@pytest.mark.parametrize("tie", [False, True])
def test_the_restricted_output_layer_of_an_int8_model(tie: bool) -> None:
    model = _model(False, tie)
    q = for_inference(model, "int8")
    ids = torch.tensor([2, 9, 17, 33, 70])
    x = torch.randn(3, 1, 64)
    with torch.inference_mode():  # the int8 layer's weight, dequantized: close, not equal
        full = q.generator(x)[..., ids]
        assert torch.allclose(output_layer(q, ids)(x), full, atol=0.05)


def test_a_list_of_every_piece_changes_nothing() -> None:
    model, src = _model(False), _sources()
    every = torch.arange(V)
    for cfg in (DecodeConfig(method="greedy"), DecodeConfig(method="beam", beam_size=3)):
        a = generate(model, src, cfg)
        b = generate(model, src, cfg, head=output_head(model, every))
        assert [h[0].tokens for h in a] == [h[0].tokens for h in b]
        for ha, hb in zip(a, b, strict=True):
            assert ha[0].log_prob == pytest.approx(hb[0].log_prob, abs=1e-4)


def test_a_greedy_path_inside_the_list_is_the_same_path_scored_over_the_list() -> None:
    """Exactness: the same tokens, and log p(list) = log p(full) − Σ log(list's mass)."""
    model, src = _model(False), _sources()
    cap = 12
    cfg = DecodeConfig(method="greedy", max_len_a=0.0, max_len_b=cap, min_len=0)
    full = generate(model, src, cfg)
    used = {t for h in full for t in h[0].tokens}
    g = torch.Generator().manual_seed(1)
    others = [i for i in torch.randperm(V, generator=g).tolist() if i not in used][:20]
    ids = torch.tensor(sorted(used | set(others) | {2}))
    assert len(ids) < V
    short = generate(model, src, cfg, head=output_head(model, ids))
    for row, (hf, hs) in enumerate(zip(full, short, strict=True)):
        tokens = hf[0].tokens
        assert hs[0].tokens == tokens
        steps = len(tokens) + 1 if len(tokens) < cap else cap  # + the <eos> step, if it ended
        # the mass the list holds at each step, read off the full model by teacher forcing
        with torch.inference_mode():
            logits = model(src[row : row + 1], torch.tensor([[1, *tokens]])).logits[0]
        log_mass = torch.logsumexp(torch.log_softmax(logits, dim=-1)[:steps, ids], dim=-1)
        assert hs[0].log_prob > hf[0].log_prob  # the list holds less than all the mass
        assert hs[0].log_prob == pytest.approx(hf[0].log_prob - float(log_mass.sum()), abs=1e-3)


def test_a_list_without_the_models_choice_changes_the_translation() -> None:
    model, src = _model(False), _sources()
    cfg = DecodeConfig(method="greedy", max_len_b=6)
    first = generate(model, src[:1], cfg)[0][0].tokens[0]
    ids = torch.tensor([i for i in range(V) if i != first])
    out = generate(model, src[:1], cfg, head=output_head(model, ids))
    assert out[0][0].tokens[0] != first


def _tiny_shortlist(tr: Translator) -> Shortlist:
    cfg = tr.model.config
    table = torch.full((cfg.src_vocab_size, 3), -1, dtype=torch.int32)
    table[4:, 0] = torch.arange(4, cfg.src_vocab_size) % cfg.tgt_vocab_size
    return Shortlist(frequent=torch.arange(4, 9, dtype=torch.int32), table=table)


def test_a_translator_saves_loads_and_switches_its_shortlist(tmp_path: Path) -> None:
    tr = tiny_translator()
    tr = Translator(tr.model, tr.src_tokenizer, tr.tgt_tokenizer, shortlist=_tiny_shortlist(tr))
    path = tr.save_pretrained(tmp_path / "m")
    assert (path / model_dir.SHORTLIST_NAME).is_file()
    loaded = Translator.from_pretrained(path)
    assert loaded.shortlist is not None and loaded.use_shortlist
    assert torch.equal(loaded.shortlist.table, tr.shortlist.table)  # type: ignore[union-attr]
    texts = ["the cat", "a dog runs"]
    with_list = [t.text for t in loaded.translate(texts)]
    without = [t.text for t in loaded.replace(use_shortlist=False).translate(texts)]
    assert with_list != without  # the list keeps the untrained model from its usual choices
    int8 = Translator.from_pretrained(path, precision="int8")  # an int8 model reads it too
    assert int8.use_shortlist and len(int8.translate(texts)) == 2


def test_a_damaged_or_mismatched_shortlist_is_one_error(tmp_path: Path) -> None:
    tr = tiny_translator()
    path = tr.save_pretrained(tmp_path / "m")
    (path / model_dir.SHORTLIST_NAME).write_bytes(b"not a safetensors file")
    with pytest.raises(ValueError, match="shortlist.safetensors"):
        Translator.from_pretrained(path)
    wrong = Shortlist(frequent=torch.tensor([1], dtype=torch.int32),
                      table=torch.zeros((3, 2), dtype=torch.int32))  # fmt: skip
    model_dir.write_shortlist(path, wrong)
    with pytest.raises(ValueError, match="source\\s+vocabulary"):
        Translator.from_pretrained(path)
    cfg = tr.model.config
    floats = Shortlist(frequent=torch.tensor([1.5]),
                       table=torch.full((cfg.src_vocab_size, 2), 2.5))  # fmt: skip
    from safetensors.torch import save_file  # a file written by another tool: floats

    save_file({"frequent": floats.frequent, "table": floats.table},
              str(path / model_dir.SHORTLIST_NAME))  # fmt: skip
    with pytest.raises(ValueError, match="shortlist.safetensors: frequent must hold integer"):
        Translator.from_pretrained(path)
    # a non-finite value is damage, whatever the tensor's role (issue 53)
    save_file({"frequent": floats.frequent, "table": floats.table.fill_(float("inf"))},
              str(path / model_dir.SHORTLIST_NAME))  # fmt: skip
    with pytest.raises(ValueError, match="tensor table holds inf"):
        Translator.from_pretrained(path)


def test_the_command_line_switches_the_shortlist(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from attenzione.cli import app

    tr = tiny_translator()
    cfg = tr.model.config
    only_eos = Shortlist(
        frequent=torch.tensor([cfg.eos_id], dtype=torch.int32),
        table=torch.full((cfg.src_vocab_size, 2), -1, dtype=torch.int32),
    )
    tr = Translator(tr.model, tr.src_tokenizer, tr.tgt_tokenizer, shortlist=only_eos)
    path = tr.save_pretrained(tmp_path / "m")
    args = ["translate", "--model", str(path), "--beam", "1", "the cat sees a dog"]
    listed = CliRunner().invoke(app, args)
    free = CliRunner().invoke(app, [*args[:-1], "--no-shortlist", args[-1]])
    assert listed.exit_code == free.exit_code == 0, (listed.output, free.output)
    # the list holds nothing but <eos> and <unk> (always listed); the model unrestricted
    # writes real words
    assert set(listed.output.split()) <= {"<unk>"}
    assert set(free.output.split()) - {"<unk>"}
