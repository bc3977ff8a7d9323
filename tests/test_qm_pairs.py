"""tools/qm_pairs.py: the Qt catalogue reader that turned GCompris' and Stellarium's Italian
translations into training pairs, on catalogues built here byte by byte."""

from __future__ import annotations

import importlib.util
import struct
from pathlib import Path
from types import ModuleType

import pytest


def _tool() -> ModuleType:
    path = Path(__file__).parents[1] / "tools" / "qm_pairs.py"
    spec = importlib.util.spec_from_file_location("qm_pairs", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


qm = _tool()
MAGIC = bytes.fromhex("3cb86418caef9c95cd211cbf60a1bddd")  # what QTranslator checks


def _field(tag: int, payload: bytes) -> bytes:
    return bytes([tag]) + struct.pack(">I", len(payload)) + payload


def _record(src: str | None, *translations: str, context: str = "Main") -> bytes:
    out = b"".join(_field(3, t.encode("utf-16-be")) for t in translations)
    out += bytes([5]) + b"\x00\x01\x02\x03"  # a hash field: four bytes, no length
    if src is not None:
        out += _field(6, src.encode("utf-8"))
    out += _field(7, context.encode("utf-8")) + _field(8, b"")
    return out + bytes([1])


def _catalogue(*records: bytes) -> bytes:
    hashes = _field(0x42, b"\x00" * 8)  # a section the reader skips
    return MAGIC + hashes + _field(0x69, b"".join(records))


def test_pairs_come_from_source_and_first_translation() -> None:
    data = _catalogue(
        _record("The Colosseum is in  Rome.", "Il Colosseo è a Roma."),
        _record("%n star(s)", "%n stella", "%n stelle"),
        _record("Untranslated", ""),
        _record(None, "Solo traduzione"),
        _record("Città\nnuova", "Nuova\tcittà"),
    )
    assert list(qm.pairs(data)) == [
        ("The Colosseum is in Rome.", "Il Colosseo è a Roma."),
        ("%n star(s)", "%n stella"),
        ("Città nuova", "Nuova città"),
    ]


def test_a_record_with_no_translation_field_value_is_skipped() -> None:
    none = bytes([3]) + struct.pack(">I", 0xFFFFFFFF) + _field(6, b"Alone") + bytes([1])
    assert list(qm.pairs(_catalogue(none, _record("Moon", "Luna")))) == [("Moon", "Luna")]


@pytest.mark.parametrize(
    "data, message",
    [
        (b"not a catalogue at all", "bad magic"),
        (MAGIC + b"\x69\x00\x00\x01\x00ab", "truncated"),
        (MAGIC + _field(0x69, b"\x09"), "unknown"),
    ],
)
def test_a_broken_catalogue_is_refused(data: bytes, message: str) -> None:
    with pytest.raises(qm.QmError, match=message):
        list(qm.pairs(data))
