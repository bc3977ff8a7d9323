"""Speed at OPUS-MT's shape: transformers, CTranslate2 and attenzione on one Marian model
(issue 68, item 4).

    python -m bench.opus_shape                              # the full run, 2 threads
    python -m bench.opus_shape --quick                      # a smoke run (tiny sizes)
    python -m bench.opus_shape --runs 3 --json bench/opus-shape.json

No download: a ``transformers.MarianMTModel`` is built here with Helsinki-NLP/opus-mt-en-de's
configuration written by hand (d_model 512, 6 + 6 layers, 8 heads, FFN 2048, swish, scaled
embeddings, Marian's static sinusoids, one joint vocabulary of 58,101 ids with ``</s>`` 0 and
``<pad>`` 58,100 the decoder's start, a final logits bias), its weights drawn with a fixed seed
wide enough that logits differ by units (normal(0, fan_in^-0.5), as
``tests/marian_helpers.marian_model(spread=True)``; the ``<pad>`` row zero, as OPUS-MT's, so
that CTranslate2's zero start vector is the same start). It is saved as a Helsinki-NLP
directory is (``save_pretrained``, two SentencePiece models trained here on a few sentences,
a ``vocab.json`` naming all 58,101 ids, ``tokenizer_config.json``), then

* run by **transformers** itself (``generate``; int8: ``torch.ao`` dynamic quantization of
  its ``nn.Linear`` layers, the output layer included);
* converted by **CTranslate2**'s own ``TransformersConverter`` (float32) and loaded with
  ``compute_type`` float32 and int8 (``inter_threads=1``, ``intra_threads=--threads``);
* imported by **attenzione** (``interop.load`` and ``write_model_dir``: what ``attenzione
  import`` does) and loaded with ``Translator.from_pretrained(dir, precision=…)``, fp32 (its
  packed layers) and int8, decoding ids with ``Translator.translate_ids`` (no text step, every
  ranking term off: ``Terms.none()``; its ``start-token`` constraint bans ``<pad>``, as
  transformers' ``bad_words_ids`` and CTranslate2's converter, which drops ``<pad>``, do).

Every engine reads the same random sources (``--src-len`` pieces and ``</s>`` each) and writes
exactly ``--length`` tokens: ``<eos>`` forbidden before that many and the length capped there —
transformers ``min_new_tokens = max_new_tokens``, CTranslate2 ``min_decoding_length =
max_decoding_length``, attenzione ``DecodeConfig(min_len=L, max_len_a=0, max_len_b=L)`` (the
loop's ``MinLength`` constraint) — so each workload costs the same number of decoder steps
everywhere. Workloads: greedy in batches of 64 and one sentence a call, beam 4 in batches of
32 and one sentence a call. Each is run once to warm up, then ``--runs`` times, the engines
taking turns (one pass each a round, the order reversed every other round); reported:
sentences/s (median and range), attenzione / CTranslate2 at the same precision, and how many
outputs equal transformers' fp32 ones (greedy fp32 should be all of them: the check that the
three decode one function). Timings vary with the machine and what else runs: run it on an
idle one and read the ratios.
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import platform
import statistics
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import torch

from attenzione.config import DecodeConfig
from attenzione.search.registry import Terms
from attenzione.translator.translator import Translator

VOCAB = 58101  # opus-mt-en-de's joint vocabulary
EOS, UNK, PAD = 0, 1, VOCAB - 1  # </s>, <unk>, <pad> (the decoder's start)
SEED = 0
# the sentences the two small SentencePiece models are trained on: no punctuation, no digits
# (so no piece is a mark or a byte: no constraint but <pad>'s applies in attenzione)
SENTENCES = (
    "the cat sat on the mat and the dog ran to the house with a red ball",
    "die katze sitzt auf der matte und der hund rennt zum haus mit einem roten ball",
)
WORKLOADS = (("greedy", 1, 64), ("beam 4", 4, 32))  # name, beam, batch when batched


# ---------------------------------------------------------------------------- the model
def opus_config() -> Any:
    """opus-mt-en-de's ``MarianConfig``, written out (transformers' defaults where it keeps them:
    static sinusoidal positions, post-norm)."""
    from transformers import MarianConfig

    return MarianConfig(
        vocab_size=VOCAB,
        decoder_vocab_size=VOCAB,
        d_model=512,
        encoder_layers=6,
        decoder_layers=6,
        encoder_attention_heads=8,
        decoder_attention_heads=8,
        encoder_ffn_dim=2048,
        decoder_ffn_dim=2048,
        activation_function="swish",
        scale_embedding=True,
        max_position_embeddings=512,
        pad_token_id=PAD,
        eos_token_id=EOS,
        decoder_start_token_id=PAD,
        forced_eos_token_id=EOS,
        share_encoder_decoder_embeddings=True,
        tie_word_embeddings=True,
        dropout=0.1,
        attention_dropout=0.0,
        activation_dropout=0.0,
    )


def random_opus_model(seed: int = SEED) -> Any:
    """The MarianMTModel of :func:`opus_config` with spread random weights (a fixed seed)."""
    import transformers

    torch.manual_seed(seed)
    model = transformers.MarianMTModel(opus_config())
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "embed_positions" in name:  # Marian's sinusoids: computed, never saved
                continue
            if "layer_norm" in name:
                p.normal_(1.0 if name.endswith("weight") else 0.0, 0.1)
            elif p.dim() == 2:  # embeddings and projections
                p.normal_(0.0, p.shape[1] ** -0.5)
            else:
                p.normal_(0.0, 0.1)
        model.final_logits_bias.normal_(0.0, 1.0)
        model.model.shared.weight[PAD].zero_()  # OPUS-MT's <pad> row is zero (all three tied)
    return model.eval()


def _filler(i: int) -> str:
    """A filler piece of letters only (no digit, no mark): ``▁qa``, ``▁qb``… ``▁qba``…"""
    letters = ""
    while True:
        i, r = divmod(i, 26)
        letters = chr(ord("a") + r) + letters
        if i == 0:
            return "\u2581q" + letters


def write_opus_dir(model: Any, directory: Path) -> list[str]:
    """``model`` saved as a Helsinki-NLP directory; the piece of each of the 58,101 ids."""
    import sentencepiece as spm

    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(directory))
    words = " ".join(SENTENCES).split()
    texts = [" ".join(words[i : i + 5]) for i in range(len(words) - 4)] * 5
    vocab = {"</s>": EOS, "<unk>": UNK}
    for side in ("source", "target"):
        buffer = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(texts),
            model_writer=buffer,
            vocab_size=40,
            hard_vocab_limit=False,
            num_threads=1,
            minloglevel=2,
        )
        (directory / f"{side}.spm").write_bytes(buffer.getvalue())
        sp = spm.SentencePieceProcessor(model_proto=buffer.getvalue())
        for i in range(sp.get_piece_size()):
            if not sp.is_control(i) and not sp.is_unknown(i):
                vocab.setdefault(sp.id_to_piece(i), len(vocab))
    k = 0
    while len(vocab) < PAD:
        vocab.setdefault(_filler(k), len(vocab))
        k += 1
    vocab["<pad>"] = PAD
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), "utf-8")
    config = {"source_lang": "en", "target_lang": "de", "separate_vocabs": False}
    (directory / "tokenizer_config.json").write_text(json.dumps(config), "utf-8")
    (directory / "README.md").write_text("---\nlanguage: [en, de]\nlicense: cc-by-4.0\n---\n")
    pieces = [""] * VOCAB
    for piece, i in vocab.items():
        pieces[i] = piece
    return pieces


def import_ours(hf_dir: Path, out: Path) -> Path:
    """What ``attenzione import HF_DIR --out OUT`` does."""
    from attenzione import interop
    from attenzione.translator.model_dir import write_model_dir

    found = interop.load(hf_dir, origin="random opus-mt-en-de shape")
    write_model_dir(out, found.model, found.src_tokenizer, found.tgt_tokenizer, info=found.info)
    return out


def convert_ct2(hf_dir: Path, out: Path) -> Path:
    """The directory converted with CTranslate2's own Transformers converter (float32); it
    reads the tokenizer with transformers' ``MarianTokenizer``, as for a downloaded model."""
    from ctranslate2.converters import TransformersConverter

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Recommended: pip install sacremoses."
        TransformersConverter(str(hf_dir)).convert(str(out), force=True)
    return out


# ---------------------------------------------------------------------------- the engines
class HF:
    """transformers' ``generate`` on the MarianMTModel (int8: dynamically quantized)."""

    def __init__(self, model: Any, length: int, precision: str) -> None:
        self.name, self.precision = f"transformers {precision}", precision
        self.length = length
        if precision == "int8":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # torch.ao's deprecation notice
                from torch.ao.quantization import quantize_dynamic

                model = quantize_dynamic(copy.deepcopy(model), {torch.nn.Linear}, torch.qint8)
        self.model = model.eval()

    @torch.inference_mode()
    def run(self, sources: list[list[int]], beam: int, batch: int) -> list[list[int]]:
        out: list[list[int]] = []
        for i in range(0, len(sources), batch):
            src = torch.tensor(sources[i : i + batch])  # one length: no padding
            ids = self.model.generate(
                input_ids=src,
                attention_mask=torch.ones_like(src),
                num_beams=beam,
                do_sample=False,
                min_new_tokens=self.length,
                max_new_tokens=self.length,
                forced_eos_token_id=None,  # OPUS-MT's would force </s> at the last step
                bad_words_ids=[[PAD]],  # as OPUS-MT's generation config
                length_penalty=1.0,
                early_stopping=False,
                decoder_start_token_id=PAD,
                pad_token_id=PAD,
                eos_token_id=EOS,
            )
            out += [row[1:].tolist() for row in ids]  # without the start token
        return out


class Ours:
    """attenzione's imported model, ids in and out (``Translator.translate_ids``)."""

    def __init__(self, model_dir: Path, length: int, precision: str) -> None:
        self.name, self.precision = f"attenzione {precision}", precision
        self.tr = Translator.from_pretrained(model_dir, precision=precision)
        self.length = length

    def run(self, sources: list[list[int]], beam: int, batch: int) -> list[list[int]]:
        n = self.length  # exactly n new tokens: no <eos> before n, none possible after
        search = DecodeConfig(
            "greedy" if beam == 1 else "beam", beam_size=beam, max_len_a=0.0, max_len_b=n, min_len=n
        )
        out = self.tr.translate_ids(
            sources, search=search, terms=Terms.none(), steps=(), batch_size=batch
        )
        return [list(hyps[0].tokens) for hyps in out]


class CT2:
    """The converted model in ``ctranslate2.Translator``: the vocabulary's pieces in and out."""

    def __init__(
        self, path: Path, pieces: list[str], length: int, threads: int, compute_type: str
    ) -> None:
        import ctranslate2

        self.name = f"ctranslate2 {compute_type}"
        self.precision = "fp32" if compute_type == "float32" else compute_type
        self.translator = ctranslate2.Translator(
            str(path),
            device="cpu",
            compute_type=compute_type,
            inter_threads=1,
            intra_threads=threads,
        )
        self.pieces, self.index = pieces, {p: i for i, p in enumerate(pieces)}
        self.length = length

    def run(self, sources: list[list[int]], beam: int, batch: int) -> list[list[int]]:
        # a Marian model's source ends with its own </s>: CTranslate2 appends nothing
        tokens = [[self.pieces[i] for i in ids] for ids in sources]
        found = self.translator.translate_batch(
            tokens,
            beam_size=beam,
            max_batch_size=batch,
            min_decoding_length=self.length,
            max_decoding_length=self.length,
        )
        return [[self.index[p] for p in r.hypotheses[0]] for r in found]


# ---------------------------------------------------------------------------- timing
def _one_pass(system: Any, sources: list[list[int]], beam: int, batch: int) -> list[list[int]]:
    """Every source once (``batch`` 1: one sentence a call)."""
    if batch == 1:
        return [system.run([s], beam, 1)[0] for s in sources]
    out: list[list[int]] = system.run(sources, beam, batch)
    return out


def measure(
    systems: list[Any], sources: list[list[int]], beam: int, batch: int, runs: int
) -> dict[str, dict[str, Any]]:
    """Each system warmed up on one batch, then ``runs`` timed passes over ``sources``,
    interleaved: in each round every system makes one pass, the order turned round from one
    round to the next, so a machine that slows down for a while slows every engine alike."""
    for system in systems:
        system.run(sources[: min(batch, len(sources))], beam, batch)  # warm-up: one batch
    rates: dict[str, list[float]] = {s.name: [] for s in systems}
    ids: dict[str, list[list[int]]] = {}
    for r in range(runs):
        for system in systems if r % 2 == 0 else systems[::-1]:
            start = time.perf_counter()
            ids[system.name] = _one_pass(system, sources, beam, batch)
            rates[system.name].append(len(sources) / (time.perf_counter() - start))
    return {
        s.name: {
            "sentences_per_s": statistics.median(rates[s.name]),
            "min": min(rates[s.name]),
            "max": max(rates[s.name]),
            "runs": rates[s.name],
            "lengths": sorted({len(t) for t in ids[s.name]}),
            "ids": ids[s.name],
        }
        for s in systems
    }


def random_sources(n: int, length: int, seed: int = SEED + 1) -> list[list[int]]:
    """``n`` sources of ``length`` random pieces (no special id) and ``</s>``."""
    g = torch.Generator().manual_seed(seed)
    body = torch.randint(UNK + 1, PAD, (n, length), generator=g)
    return [[*row, EOS] for row in body.tolist()]


def _cpu() -> str:
    """The processor's name (Linux's /proc/cpuinfo), else the machine's architecture."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.opus_shape", description=__doc__)
    ap.add_argument("--sentences", type=int, default=128, help="sentences of a batched run")
    ap.add_argument("--one-sentences", type=int, default=16, help="sentences one a call")
    ap.add_argument("--runs", type=int, default=3, help="timed runs after the warm-up")
    ap.add_argument("--src-len", type=int, default=32, help="source pieces (then </s>)")
    ap.add_argument("--length", type=int, default=32, help="tokens every engine writes")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--quick", action="store_true", help="a smoke run: 4 + 2 sentences, 1 run")
    args = ap.parse_args(argv)
    if args.quick:
        args.sentences, args.one_sentences, args.runs = 4, 2, 1
        args.src_len, args.length = 8, 8
    torch.set_num_threads(args.threads)
    import ctranslate2
    import transformers

    sources = random_sources(args.sentences, args.src_len)
    t0 = time.perf_counter()
    hf_model = random_opus_model()
    with tempfile.TemporaryDirectory(prefix="bench-opus-shape-") as tmp:
        root = Path(tmp)
        pieces = write_opus_dir(hf_model, root / "hf")
        ours_dir = import_ours(root / "hf", root / "ours")
        ct2_dir = convert_ct2(root / "hf", root / "ct2")
        systems: list[Any] = []
        for precision, ct2_type in (("fp32", "float32"), ("int8", "int8")):
            systems += [
                HF(hf_model, args.length, precision),
                CT2(ct2_dir, pieces, args.length, args.threads, ct2_type),
                Ours(ours_dir, args.length, precision),
            ]
        print(
            f"built, imported and converted in {time.perf_counter() - t0:.0f} s; "
            f"{sum(p.numel() for p in hf_model.parameters()):,} parameters; "
            f"{args.threads} threads",
            flush=True,
        )
        results: dict[str, Any] = {}
        for name, beam, batched in WORKLOADS:
            for batch in (batched, 1):
                work = f"{name}, {'batch ' + str(batch)}"
                sample = sources if batch > 1 else sources[: args.one_sentences]
                print(f"{work} ({len(sample)} sentences, {args.runs} runs):", flush=True)
                rows = measure(systems, sample, beam, batch, args.runs)
                reference = rows["transformers fp32"]["ids"]
                ct2 = {s.precision: rows[s.name] for s in systems if isinstance(s, CT2)}
                for s in systems:
                    r = rows[s.name]
                    same = sum(a == b for a, b in zip(r["ids"], reference, strict=True))
                    r["identical_to_transformers_fp32"] = same
                    ratio = r["sentences_per_s"] / ct2[s.precision]["sentences_per_s"]
                    r["ratio_to_ctranslate2"] = ratio
                    print(
                        f"  {s.name:>21}: {r['sentences_per_s']:7.2f} sentences/s "
                        f"({r['min']:.2f}–{r['max']:.2f}), {ratio:.2f}× CTranslate2 "
                        f"{s.precision}, lengths {r['lengths']}, "
                        f"{same}/{len(sample)} = transformers fp32",
                        flush=True,
                    )
                results[work] = {
                    n: {k: v for k, v in r.items() if k != "ids"} for n, r in rows.items()
                }
    counts = {b: len(sources) if b > 1 else min(args.one_sentences, len(sources)) for b in (64, 1)}
    exact = all(
        results[f"greedy, batch {b}"]["attenzione fp32"]["identical_to_transformers_fp32"] == n
        for b, n in counts.items()
    )
    print(f"attenzione fp32 greedy ids equal transformers' on every source: {exact}")
    if args.json:
        meta = {
            "shape": "Helsinki-NLP/opus-mt-en-de (random weights, seed 0)",
            "threads": args.threads,
            "sentences": args.sentences,
            "one_sentences": min(args.one_sentences, args.sentences),
            "runs": args.runs,
            "src_len": args.src_len,
            "length": args.length,
            "quick": args.quick,
            "greedy_fp32_identical_to_transformers": exact,
            "cpu": _cpu(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "ctranslate2": ctranslate2.__version__,
        }
        args.json.write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
