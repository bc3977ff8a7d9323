"""The model's own embedding space (issue 67 item 6): nearest pieces, analogies and
similarities over the rows of a model's embedding table.

On small random models every answer is checked against a direct numpy computation of
cosine similarity over the table (1e-6); on the shipped model only properties hold (valid
pieces, cosines in [−1, 1], best first), never particular neighbours. ``attenzione embeddings
… --model`` and ``POST /embeddings`` give the same answer.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from attenzione.cli import app
from attenzione.data import SentencePieceTokenizer
from attenzione.model.transformer import Transformer
from attenzione.translator.embedding_space import EmbeddingSpace, embedding_space
from attenzione.translator.translator import PRETRAINED_DIR, Translator
from serve_helpers import Server, post, running_server
from tiny_model import tiny_config
from toy_corpus import toy_pairs

SPECIALS = {0, 1, 2, 3}  # <pad> <bos> <eos> <unk>
SHIPPED = pytest.mark.skipif(
    not (PRETRAINED_DIR / "model.safetensors").is_file(), reason="no shipped model in this checkout"
)


@pytest.fixture(scope="module")
def tok() -> SentencePieceTokenizer:
    """48 pieces, no byte fallback: every word of the toy corpus is several pieces
    (``cat`` is ``▁ca`` ``t``), and a character it never saw is ``<unk>``."""
    texts = [t for pair in toy_pairs() for t in pair] * 2
    return SentencePieceTokenizer.train(texts, vocab_size=48, byte_fallback=False)


def _translator(tok: SentencePieceTokenizer, *, seed: int = 0, **kw: object) -> Translator:
    torch.manual_seed(seed)
    cfg = tiny_config(tok.vocab_size, tok.vocab_size, **kw)
    return Translator(Transformer(cfg), tok, tok)


@pytest.fixture(scope="module")
def shared(tok: SentencePieceTokenizer) -> Translator:
    """One table for both sides, tied to the output layer (as the shipped models)."""
    return _translator(tok, share_src_tgt_embeddings=True, tie_embeddings=True)


@pytest.fixture(scope="module")
def separate(tok: SentencePieceTokenizer) -> Translator:
    """A source and a target table of their own."""
    return _translator(tok, seed=1)


def _word_pieces(tok: SentencePieceTokenizer) -> list[str]:
    """The pieces that begin a word (``▁ca``), as a query names them."""
    pieces = [tok.id_to_token(i) for i in range(tok.vocab_size)]
    return [p for p in pieces if p.startswith("\u2581") and len(p) > 1]


def _table(t: Translator, side: str = "source") -> np.ndarray:
    embed = t.model.src_embed if side == "source" else t.model.tgt_embed
    return embed.weight.detach().numpy().astype(np.float64)


def _oracle(table: np.ndarray, vec: np.ndarray, skip: set[int], k: int) -> list[tuple[int, float]]:
    """The k rows of highest cosine with ``vec``, computed directly (no unit table)."""
    with np.errstate(invalid="ignore"):  # <pad>'s row is zero: NaN, and never listed
        cos = table @ vec / (np.linalg.norm(table, axis=1) * np.linalg.norm(vec))
    ids = [i for i in np.argsort(-cos, kind="stable") if int(i) not in skip]
    return [(int(i), float(cos[i])) for i in ids[:k]]


def _same(answer: Any, expected: list[tuple[int, float]]) -> None:
    got = [(n.id, n.cosine) for n in answer.neighbours]
    assert [i for i, _ in got] == [i for i, _ in expected]
    np.testing.assert_allclose([c for _, c in got], [c for _, c in expected], rtol=0, atol=1e-6)


# ---------------------------------------------------------------------- the oracle
def test_nearest_is_cosine_over_the_tables_rows(
    shared: Translator, tok: SentencePieceTokenizer
) -> None:
    space = shared.embedding_space("source")
    table = _table(shared)
    pieces = _word_pieces(tok)
    assert len(pieces) >= 5
    as_words = 0
    for piece in pieces:
        i = [tok.id_to_token(j) for j in range(tok.vocab_size)].index(piece)
        answer = space.nearest(piece, 7)
        assert answer.queries[0].ids == (i,) and answer.queries[0].pieces == (piece,)
        assert answer.queries[0].to_dict()["mean"] is False
        _same(answer, _oracle(table, table[i], SPECIALS | {i}, 7))
        assert answer.excluded == (piece,)
        # a word the tokenizer reads as this one piece is the same query
        if tok.encode(piece[1:]) == [i]:
            assert space.nearest(piece[1:], 7).neighbours == answer.neighbours
            as_words += 1
    assert as_words > 0


def test_the_query_and_the_specials_are_never_listed(shared: Translator) -> None:
    space = shared.embedding_space("source")
    n = len(_table(shared))
    for word in ("cat", "\u2581ca"):
        ids = set(space.query(word).ids)
        everything = space.nearest(word, n - len(SPECIALS) - len(ids))
        listed = [x.id for x in everything.neighbours]
        assert set(listed) == set(range(n)) - SPECIALS - ids
        assert len(listed) == len(set(listed))
        # asking for more than there are lists them all, no more
        assert len(space.nearest(word, min(200, n)).neighbours) == len(listed)
        # cosines sorted, best first, within [-1, 1]
        cos = [x.cosine for x in everything.neighbours]
        assert cos == sorted(cos, reverse=True) and all(-1 <= c <= 1 for c in cos)


def test_a_word_of_several_pieces_is_the_mean_of_their_rows(
    shared: Translator, tok: SentencePieceTokenizer
) -> None:
    space = shared.embedding_space("source")
    table = _table(shared)
    for word in ("cat", "macchina", "è"):
        ids = tok.encode(word)
        q = space.query(word)
        assert q.ids == tuple(ids) and len(ids) > 1
        assert q.pieces == tuple(tok.id_to_token(i) for i in ids)
        assert q.to_dict()["mean"] is True
        mean = table[ids].mean(axis=0)
        answer = space.nearest(word, 6)
        _same(answer, _oracle(table, mean, SPECIALS | set(ids), 6))
        assert set(answer.excluded) == set(q.pieces)
        np.testing.assert_allclose(space.vector(word), mean, rtol=0, atol=1e-12)


def test_analogy_and_similarity_are_the_formulas(
    shared: Translator, tok: SentencePieceTokenizer
) -> None:
    space = shared.embedding_space("source")
    table = _table(shared)
    a, b, c = "cat", "\u2581nuov", "rosso"
    ids = [space.query(w).ids for w in (a, b, c)]
    assert [len(x) for x in ids] == [2, 1, 2]
    vecs = [table[list(x)].mean(axis=0) for x in ids]
    units = [v / np.linalg.norm(v) for v in vecs]
    skip = SPECIALS | {i for x in ids for i in x}
    answer = space.analogy(a, b, c, 5)
    _same(answer, _oracle(table, units[0] - units[1] + units[2], skip, 5))
    assert [q.text for q in answer.queries] == [a, b, c]
    sim = space.similarity(a, c)
    want = vecs[0] @ vecs[2] / (np.linalg.norm(vecs[0]) * np.linalg.norm(vecs[2]))
    assert sim.cosine == pytest.approx(float(want), abs=1e-6)
    assert space.similarity(c, a).cosine == pytest.approx(sim.cosine, abs=1e-12)
    assert space.similarity(a, a).cosine == pytest.approx(1.0, abs=1e-12)


def test_each_side_reads_its_own_table_and_says_whether_they_are_one(
    shared: Translator, separate: Translator
) -> None:
    src, tgt = separate.embedding_space("source"), separate.embedding_space("target")
    assert src.table["shared"] is False and tgt.table["shared"] is False
    assert src.table["tied"] is False and tgt.table["tied"] is False
    for side, space in (("source", src), ("target", tgt)):
        table = _table(separate, side)
        ids = list(space.query("cat").ids)
        mean = table[ids].mean(axis=0)
        _same(space.nearest("cat", 5), _oracle(table, mean, SPECIALS | set(ids), 5))
    assert src.nearest("cat", 5).neighbours != tgt.nearest("cat", 5).neighbours
    one = shared.embedding_space("source").table
    assert one["shared"] is True and one["tied"] is True and "tied" in one["about"]
    assert shared.embedding_space("source") is embedding_space(shared, "source")  # built once
    answer = shared.embedding_space("target").nearest("cat", 4).to_dict()
    assert answer["table"]["side"] == "target"
    source = shared.embedding_space("source").nearest("cat", 4).to_dict()
    assert answer["neighbours"] == source["neighbours"]


def test_corpus_tags_are_special_and_a_projected_table_is_its_own_width(
    tok: SentencePieceTokenizer,
) -> None:
    tagged = tok.with_tags(["lc"])
    lc = tagged.tag_id("lc")
    torch.manual_seed(0)
    cfg = tiny_config(tagged.vocab_size, tagged.vocab_size, src_embed_dim=12)
    t = Translator(Transformer(cfg), tagged, tagged)
    space = t.embedding_space("source")
    assert lc in space.special_ids
    ids = set(space.query("cat").ids)
    listed = {x.id for x in space.nearest("cat", len(space) - len(SPECIALS) - 3).neighbours}
    assert listed == set(range(len(space))) - SPECIALS - ids - {lc}
    assert space.table["width"] == 12 and "projection" in space.table["about"]
    table = _table(t)
    mean = table[list(ids)].mean(axis=0)
    _same(space.nearest("cat", 5), _oracle(table, mean, SPECIALS | ids | {lc}, 5))


def test_what_cannot_be_placed_is_one_line(shared: Translator) -> None:
    space = shared.embedding_space("source")
    cases = [
        ("ж", "cannot be represented"),  # no byte fallback: <unk>
        ("\u2581zzzz", "is not a piece"),
        ("<eos>", "special piece"),
        ("", "empty"),
        ("   ", "empty"),
        ("a" * 101, "at most 100"),
    ]
    for word, said in cases:
        with pytest.raises(ValueError, match=said) as err:
            space.nearest(word)
        assert "\n" not in str(err.value)
    for k in (0, -1, 201):
        with pytest.raises(ValueError, match="k must be"):
            space.nearest("cat", k)
    with pytest.raises(ValueError, match="side must be source or target"):
        shared.embedding_space("middle")


def test_only_the_models_fp32_rows_are_read(tok: SentencePieceTokenizer) -> None:
    """A bf16 table is not the model's numbers: refused in one line. An int8 translator keeps
    its embedding table in fp32 (dynamic quantisation touches linear layers only): the same
    answer."""
    from attenzione.model.fast.precision import for_inference

    torch.manual_seed(0)
    model = Transformer(tiny_config(tok.vocab_size, tok.vocab_size)).eval()
    with pytest.raises(ValueError, match="not the model's fp32 rows") as err:
        EmbeddingSpace(model.src_embed.weight.detach().bfloat16(), tok)
    assert "\n" not in str(err.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "this CPU has no native bf16", where it has none
        bf16 = Translator(for_inference(model, "bf16"), tok, tok, precision="bf16")
    with pytest.raises(ValueError, match="load the model with precision fp32"):
        bf16.embedding_space()
    fp32 = Translator(model, tok, tok).embedding_space().nearest("cat", 5)
    int8 = Translator(for_inference(model, "int8"), tok, tok, precision="int8")
    assert int8.embedding_space().nearest("cat", 5).neighbours == fp32.neighbours


# ---------------------------------------------------------------------- the shipped model
@SHIPPED
def test_the_shipped_models_neighbours_are_valid_pieces_best_first() -> None:
    t = Translator.from_pretrained()
    for side in ("source", "target"):
        space = t.embedding_space(side)
        tokenizer = t.src_tokenizer if side == "source" else t.tgt_tokenizer
        assert space.table["rows"] == t.model.config.src_vocab_size
        assert space.table["shared"] is True and space.table["tied"] is True
        for word in ("king", "\u2581the", "gatto", "kingdoms", "2017"):
            answer = space.nearest(word, 20)
            q = answer.queries[0]
            assert q.ids == tuple(tokenizer.encode(word.lstrip("\u2581")))
            cos = [n.cosine for n in answer.neighbours]
            assert len(cos) == 20 and cos == sorted(cos, reverse=True)
            assert all(-1 <= c <= 1 for c in cos)
            for n in answer.neighbours:
                assert tokenizer.id_to_token(n.id) == n.piece
                assert n.id not in space.special_ids and n.id not in q.ids
        analogy = space.analogy("king", "man", "woman", 5)
        assert len(analogy.neighbours) == 5
        asked = {i for q in analogy.queries for i in q.ids}
        assert all(n.id not in asked for n in analogy.neighbours)
        sim = space.similarity("cat", "dog").cosine
        assert sim is not None and -1 <= sim <= 1


# ---------------------------------------------------------------------- CLI and service
@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(tmp_path_factory.mktemp("embeddings")) as s:
        yield s


def _cli(*args: str) -> Any:
    res = CliRunner().invoke(app, ["embeddings", *args])
    assert res.exit_code == 0, res.output
    return res.output


def _refused(*args: str) -> str:
    res = CliRunner().invoke(app, ["embeddings", *args])
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1, res.output
    return res.output


def _same_answer(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a["kind"] == b["kind"] and a["table"] == b["table"] and a["queries"] == b["queries"]
    if a["kind"] == "similarity":
        assert a["cosine"] == pytest.approx(b["cosine"], abs=1e-9)
        return
    assert [(n["piece"], n["id"]) for n in a["neighbours"]] == [
        (n["piece"], n["id"]) for n in b["neighbours"]
    ]
    for x, y in zip(a["neighbours"], b["neighbours"], strict=True):
        assert x["cosine"] == pytest.approx(y["cosine"], abs=1e-9)


@SHIPPED
def test_the_command_line_and_the_service_give_the_same_answer(server: Server) -> None:
    pair = {"source": "en", "target": "it"}
    cli = json.loads(_cli("nearest", "kingdoms", "--model", "en-it", "-k", "8", "--json"))
    code, served = post(server.url + "/embeddings", {**pair, "word": "kingdoms", "k": 8})
    assert code == 200, served
    _same_answer(cli, served)
    assert [p["piece"] for p in served["queries"][0]["pieces"]] == ["\u2581king", "dom", "s"]
    assert served["queries"][0]["mean"] is True
    cli = json.loads(
        _cli(
            "analogy",
            "walked",
            "walk",
            "run",
            "-m",
            "en-it",
            "--side",
            "target",
            "-k",
            "6",
            "--json",
        )  # fmt: skip
    )
    code, served = post(
        server.url + "/embeddings",
        {**pair, "analogy": ["walked", "walk", "run"], "k": 6, "side": "target"},
    )
    assert code == 200, served
    _same_answer(cli, served)
    assert served["table"]["side"] == "target" and served["table"]["language"] == "it"
    cli = json.loads(_cli("similarity", "cat", "gatto", "-m", "en-it", "--json"))
    code, served = post(server.url + "/embeddings", {**pair, "similarity": "cat,gatto"})
    assert code == 200, served
    _same_answer(cli, served)
    # the text the command prints carries the same numbers
    text = _cli("nearest", "kingdoms", "--model", "en-it", "-k", "3")
    code, served = post(server.url + "/embeddings", {**pair, "word": "kingdoms", "k": 3})
    assert code == 200 and served["k"] == 3
    assert "kingdoms = the mean of \u2581king" in text
    for n in served["neighbours"]:
        assert f"{n['piece']}" in text and f"{n['cosine']:.4f}" in text


@SHIPPED
def test_bad_input_is_one_line_on_both(server: Server) -> None:
    pair = {"source": "en", "target": "it"}
    for body, said in [
        ({"word": "<eos>"}, "special piece"),
        ({"word": "\u2581zzzzqq"}, "is not a piece"),
        ({"word": "king", "k": 0}, "k must be"),
        ({"word": "king", "side": "middle"}, "side must be"),
        ({"analogy": ["king", "man"]}, "takes 3 words"),
        ({}, "give one of word"),
        ({"word": "king", "analogy": ["a", "b", "c"]}, "not word and analogy"),
        ({"word": 5}, "word must be a string"),
    ]:
        code, answer = post(server.url + "/embeddings", {**pair, **body})
        assert code == 400 and said in answer["error"], (body, answer)
        assert "\n" not in answer["error"]
    code, answer = post(server.url + "/embeddings", {"source": "auto", "target": "it", "word": "x"})
    assert code == 400 and "not auto" in answer["error"]
    assert "special piece" in _refused("nearest", "<eos>", "--model", "en-it")
    assert "not a model directory" in _refused("nearest", "king", "--model", "nowhere")
    assert "no installed model translates fr→de" in _refused("nearest", "king", "-m", "fr-de")
    assert "--side must be" in _refused("nearest", "king", "-m", "en-it", "--side", "middle")
    assert "add --model" in _refused("nearest", "king", "--json")
    assert "give one of them" in _refused("nearest", "king", "-m", "en-it", "--glove", "g.txt")


def test_a_pair_only_a_pivot_reaches_has_no_one_table() -> None:
    """A server whose it → de goes through English (two models) refuses /embeddings for it in
    one line, and answers for a pair one model translates (a word-level model here: each word
    is one piece)."""
    import asyncio

    from attenzione.serve.batcher import Batcher, Route
    from attenzione.serve.fields import ApiError
    from attenzione.serve.language import Languages
    from attenzione.serve.service import Service, Settings
    from serve_helpers import with_worker
    from tiny_model import tiny_translator

    routes = {"it-en": Route(tiny_translator(1)), "en-de": Route(tiny_translator(2))}
    service = Service(Batcher(routes), Languages(("it", "en"), ("en", "de")), Settings(files=False))
    with pytest.raises(ApiError) as err:
        asyncio.run(service.embeddings({"source": "it", "target": "de", "word": "cat"}, "c"))
    assert err.value.status == 400 and "goes through another language" in err.value.message
    answer = with_worker(
        service, service.embeddings({"source": "en", "target": "de", "word": "cat", "k": 3}, "c")
    )
    table = routes["en-de"].translator.model.src_embed.weight.detach().numpy().astype(np.float64)
    (piece,) = answer["queries"][0]["pieces"]
    assert piece["piece"] == "cat"
    got = [(n["id"], n["cosine"]) for n in answer["neighbours"]]
    want = _oracle(table, table[piece["id"]], SPECIALS | {piece["id"]}, 3)
    assert [x for x, _ in got] == [x for x, _ in want]
    np.testing.assert_allclose([c for _, c in got], [c for _, c in want], rtol=0, atol=1e-6)
