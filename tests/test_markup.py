"""Inline tags placed in a translation by attention (attenzione.pipeline.markup), without a
model."""

from __future__ import annotations

import torch

from attenzione.pipeline.markup import Tag, inline_pairs, insert_tags, place, words


def _render(text: str, placed: list[tuple[int, Tag]]) -> str:
    out, pos = [], 0
    for at, tag in placed:
        out.append(text[pos:at] + tag.text)
        pos = at
    return "".join(out) + text[pos:]


def _attending(n_tgt: int, n_src: int, links: dict[int, int]) -> torch.Tensor:
    """(T,S) attention: target piece t on source piece links[t] (0.9), the rest spread."""
    w = torch.full((n_tgt, n_src), 0.1 / max(n_src - 1, 1))
    for t, s in links.items():
        w[t, s] = 0.9
    return w


def test_inline_pairs_pair_nested_tags_and_leave_cutting_crossed_and_lone_ones() -> None:
    tags = ["<b>", "<i>", "</i>", "</b>", "<br/>", "<p>", "</p>", "<a href='x'>", "</A>"]
    assert inline_pairs(list(enumerate(tags))) == {0: 3, 1: 2, 7: 8}
    crossed = ["<b>", "<i>", "</b>", "</i>", "<u>"]
    assert inline_pairs(list(enumerate(crossed))) == {}
    assert inline_pairs(list(enumerate(["</b>", "<b>"]))) == {}


def test_words_group_pieces_with_spaces_bytes_and_punctuation() -> None:
    pieces = ["▁Fai", "▁clic", "▁", "3", "0", ":", "▁D", "vo", "<0xC5>", "<0x99>", "ák", "."]
    assert words(pieces) == [[0], [1], [2, 3, 4], [5], [6, 7, 8, 9, 10], [11]]


def test_a_pair_goes_around_the_words_that_attend_to_what_it_enclosed() -> None:
    # "Click <b>Save</b> to keep it." → "Fai clic su Salva per tenerlo."
    src = ["▁Click", "▁Save", "▁to", "▁keep", "▁it", "."]
    tgt = ["▁Fai", "▁clic", "▁su", "▁Salva", "▁per", "▁tener", "lo", "."]
    tags = [Tag("<b>", 5, 0, True), Tag("</b>", 9, 0, False)]
    w = _attending(len(tgt), len(src), {0: 0, 1: 0, 2: 0, 3: 1, 4: 2, 5: 3, 6: 4, 7: 5})
    text = "Fai clic su Salva per tenerlo."
    assert _render(text, place(tags, src, tgt, w)) == "Fai clic su <b>Salva</b> per tenerlo."
    # the words between the first and the last that look inside (or at punctuation) are in
    w = _attending(len(tgt), len(src), {0: 0, 1: 1, 2: 5, 3: 1, 4: 2, 5: 3, 6: 4, 7: 5})
    assert _render(text, place(tags, src, tgt, w)) == "Fai <b>clic su Salva</b> per tenerlo."


def test_pairs_stay_nested_may_swap_and_are_never_lost() -> None:
    # "a <b>red</b> <i>car</i>" → "un'auto rossa": the pairs swap with their words
    src = ["▁a", "▁red", "▁car"]
    tgt = ["▁un", "'", "auto", "▁rossa"]
    tags = [
        Tag("<b>", 1, 0, True),
        Tag("</b>", 4, 0, False),
        Tag("<i>", 4, 1, True),
        Tag("</i>", 7, 1, False),
    ]
    w = _attending(4, 3, {0: 0, 1: 0, 2: 2, 3: 1})
    assert _render("un'auto rossa", place(tags, src, tgt, w)) == "un'<i>auto</i> <b>rossa</b>"
    # "<b>big <i>red</i></b> car" with "rosso" looking outside its parent: kept inside it
    src = ["▁big", "▁red", "▁car"]
    tgt = ["▁auto", "▁grande", "▁rossa"]
    tags = [
        Tag("<b>", 0, 0, True),
        Tag("<i>", 3, 1, True),
        Tag("</i>", 6, 1, False),
        Tag("</b>", 6, 0, False),
    ]
    w = _attending(3, 3, {0: 2, 1: 0, 2: 2})
    out = _render("auto grande rossa", place(tags, src, tgt, w))
    assert out == "auto <b><i>grande</i></b> rossa"
    # two pairs side by side and one target word: the second is kept, empty
    src = ["▁yes", "▁no"]
    tags = [
        Tag("<b>", 0, 0, True),
        Tag("</b>", 3, 0, False),
        Tag("<i>", 3, 1, True),
        Tag("</i>", 5, 1, False),
    ]
    out = _render("sì", place(tags, src, ["▁sì"], _attending(1, 2, {0: 0})))
    assert out == "<b>sì</b><i></i>"


def test_punctuation_at_a_span_edge_stays_outside_unless_the_source_had_it_inside() -> None:
    # "<b>Ctrl</b>: move" → "Ctrl: sposta", where ":" looks at "Ctrl"
    src = ["▁Ctrl", ":", "▁move"]
    tgt = ["▁Ctrl", ":", "▁sposta"]
    w = _attending(3, 3, {0: 0, 1: 0, 2: 2})
    tags = [Tag("<b>", 0, 0, True), Tag("</b>", 4, 0, False)]
    assert _render("Ctrl: sposta", place(tags, src, tgt, w)) == "<b>Ctrl</b>: sposta"
    tags = [Tag("<b>", 0, 0, True), Tag("</b>", 5, 0, False)]  # "<b>Ctrl:</b> move"
    assert _render("Ctrl: sposta", place(tags, src, tgt, w)) == "<b>Ctrl:</b> sposta"


def test_insert_tags_puts_tags_back_where_they_stood() -> None:
    tags = [Tag("<b>", 0, 0, True), Tag("</b>", 1, 0, False)]
    assert insert_tags("! ?", tags) == "<b>!</b> ?"
    assert insert_tags("!", [Tag("<i>", 1, 0, True), Tag("</i>", 1, 0, False)]) == "!<i></i>"


def test_a_translation_that_starts_with_lone_spaces_is_counted_from_its_first_letter() -> None:
    # decoding strips every leading space: "▁ ▁Salva il file" is "Salva il file"
    tags = [Tag("<b>", 0, 0, True), Tag("</b>", 4, 0, False)]
    w = _attending(4, 3, {0: 0, 1: 0, 2: 1, 3: 2})
    placed = place(tags, ["▁Save", "▁the", "▁file"], ["▁", "▁Salva", "▁il", "▁file"], w)
    assert _render("Salva il file", placed) == "<b>Salva</b> il file"


def test_a_pair_does_not_reach_across_a_word_that_looks_outside_it() -> None:
    # "Tom is <b>here</b>." → "Tom è qui.": "Tom" strays to "here", "è" looks at "is"
    src = ["▁Tom", "▁is", "▁here", "."]
    tgt = ["▁Tom", "▁è", "▁qui", "."]
    tags = [Tag("<b>", 5, 0, True), Tag("</b>", 9, 0, False)]
    w = torch.tensor(
        [[0.4, 0.0, 0.5, 0.1], [0.0, 0.9, 0.1, 0.0], [0.0, 0.0, 0.9, 0.1], [0.0, 0.0, 0.1, 0.9]]
    )
    assert _render("Tom è qui.", place(tags, src, tgt, w)) == "Tom è <b>qui</b>."
    # without the break it was "<b>Tom è qui</b>."; "Tom" alone is the lighter block


def test_a_short_first_word_no_inside_word_attends_from_most_is_left_out() -> None:
    # "Use the <b>context menu</b>" → "Usa il menu contestuale": "il" looks at "context"
    # (inside), but "context" and "menu" attend from "contestuale" and "menu" most
    src = ["▁Use", "▁the", "▁context", "▁menu"]
    tgt = ["▁Usa", "▁il", "▁menu", "▁contestuale"]
    tags = [Tag("<b>", 6, 0, True), Tag("</b>", 17, 0, False)]
    w = torch.tensor(
        [[0.9, 0.1, 0.0, 0.0], [0.0, 0.3, 0.4, 0.3], [0.0, 0.0, 0.1, 0.9], [0.0, 0.0, 0.9, 0.1]]
    )
    out = _render("Usa il menu contestuale", place(tags, src, tgt, w))
    assert out == "Usa il <b>menu contestuale</b>"
    # a long first word stays ("comportamenti" is no article)
    tgt = ["▁Usa", "▁comportamenti", "▁menu", "▁contestuale"]
    out = _render("Usa comportamenti menu contestuale", place(tags, src, tgt, w))
    assert out == "Usa <b>comportamenti menu contestuale</b>"


def test_a_pair_no_word_looks_into_goes_around_a_word_not_punctuation() -> None:
    src = ["▁Tom", "▁is", "▁here", "."]
    tgt = ["▁Tom", "▁è", "▁qui", "."]
    tags = [Tag("<b>", 3, 0, True), Tag("</b>", 5, 0, False)]  # around "is"
    w = torch.tensor(
        [[0.9, 0.0, 0.1, 0.0], [0.0, 0.2, 0.8, 0.0], [0.0, 0.1, 0.9, 0.0], [0.0, 0.4, 0.0, 0.6]]
    )
    assert _render("Tom è qui.", place(tags, src, tgt, w)) == "Tom <b>è</b> qui."


def test_a_pair_around_a_word_whose_only_look_comes_from_punctuation_goes_around_a_word() -> None:
    # "x <b>yes</b> done" → "x , sì fatto" where only "," looks at "yes"
    src = ["▁x", "▁yes", "▁done"]
    tgt = ["▁x", "▁,", "▁sì", "▁fatto"]
    tags = [Tag("<b>", 1, 0, True), Tag("</b>", 4, 0, False)]
    w = torch.tensor([[0.9, 0.1, 0.0], [0.1, 0.8, 0.1], [0.5, 0.4, 0.1], [0.0, 0.1, 0.9]])
    assert _render("x , sì fatto", place(tags, src, tgt, w)) == "x , <b>sì</b> fatto"
