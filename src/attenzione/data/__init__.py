"""Data: corpus readers, splits, tokenizers, GloVe vectors and batching (never imports the model)."""

from attenzione.data.batching import (
    Batch,
    TokenBudgetSampler,
    collate,
    naive_batches,
    padding_ratio,
)
from attenzione.data.corpus import (
    CorpusError,
    Splits,
    clean_pairs,
    load_corpus,
    normalize,
    read_pairs,
    read_parallel,
    split_by_sentence,
    write_pairs,
)
from attenzione.data.tokenizers import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    SPECIALS,
    UNK_ID,
    SentencePieceTokenizer,
    Tokenizer,
    WordTokenizer,
    load_tokenizer,
)

__all__ = [
    "BOS_ID",
    "EOS_ID",
    "PAD_ID",
    "SPECIALS",
    "UNK_ID",
    "Batch",
    "CorpusError",
    "SentencePieceTokenizer",
    "Splits",
    "TokenBudgetSampler",
    "Tokenizer",
    "WordTokenizer",
    "clean_pairs",
    "collate",
    "load_corpus",
    "load_tokenizer",
    "naive_batches",
    "normalize",
    "padding_ratio",
    "read_pairs",
    "read_parallel",
    "split_by_sentence",
    "write_pairs",
]


def __getattr__(name: str) -> object:
    # GloVe needs numpy (and optionally pyarrow); load it only when asked for.
    if name in (
        "GloVe",
        "Coverage",
        "load_glove",
        "load_glove_text",
        "load_packaged_glove",
        "embedding_matrix",
    ):
        from attenzione.data import glove

        return getattr(glove, name)
    raise AttributeError(name)
