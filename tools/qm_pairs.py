"""English–Italian pairs from a Qt translation catalogue (``.qm``), one ``English<TAB>Italian``
line each, for training.

    python tools/qm_pairs.py CATALOGUE.qm [...] > pairs.tsv

Qt programs ship their translations as compiled ``.qm`` files, not gettext ``.mo``, so the
shared data's program messages (every Debian ``.mo``) do not hold them. Two Debian 12 packages
carry prose worth having: GCompris (``gcompris-qt-data``:
``usr/share/gcompris-qt/translations/gcompris_it.qm``, with Wikipedia-like texts on monuments,
animals and the planets) and Stellarium (``stellarium-data``:
``usr/share/stellarium/translations/{stellarium,stellarium-scripts}/it.qm``). Fetch them with
``apt-get download PACKAGE`` and unpack with ``dpkg-deb -x``.

The format, as Qt's ``QTranslator`` reads it: a 16-byte magic, then sections, each a tag byte
and a big-endian 32-bit length. The messages section (tag 0x69) is a run of records, each a
sequence of fields ended by tag 1: a translation (3: UTF-16BE, length 0xFFFFFFFF for none),
the source text (6), the context (7) and the comment (8) (UTF-8), an obsolete field (2, with a
length) and a hash (5, four bytes). A record with no source text or no translation gives no
pair; whitespace runs become one space, and the first plural form stands for the translation.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Iterator
from pathlib import Path

MAGIC = bytes.fromhex("3cb86418caef9c95cd211cbf60a1bddd")
MESSAGES = 0x69


class QmError(ValueError):
    """A file that is not a well-formed ``.qm`` catalogue."""


def _length(data: bytes, pos: int) -> int:
    if pos + 4 > len(data):
        raise QmError("truncated length field")
    return int(struct.unpack(">I", data[pos : pos + 4])[0])


def messages(data: bytes) -> Iterator[dict[str, str | list[str]]]:
    """Each message of a ``.qm`` catalogue: ``src``, ``ctx``, ``cmt`` (str) and ``tr`` (the
    translations, one per plural form), as far as the record has them."""
    if data[:16] != MAGIC:
        raise QmError("not a Qt .qm catalogue (bad magic)")
    pos = 16
    while pos < len(data):
        tag, size = data[pos], _length(data, pos + 1)
        pos += 5
        if pos + size > len(data):
            raise QmError("truncated section")
        if tag == MESSAGES:
            yield from _records(data[pos : pos + size])
        pos += size


def _records(block: bytes) -> Iterator[dict[str, str | list[str]]]:
    pos, msg = 0, {}  # type: ignore[var-annotated]
    fields = {6: "src", 7: "ctx", 8: "cmt"}
    while pos < len(block):
        tag = block[pos]
        pos += 1
        if tag == 1:
            yield msg
            msg = {}
        elif tag == 3:
            size = _length(block, pos)
            pos += 4
            if size != 0xFFFFFFFF:
                msg.setdefault("tr", []).append(block[pos : pos + size].decode("utf-16-be"))
                pos += size
        elif tag in fields:
            size = _length(block, pos)
            msg[fields[tag]] = block[pos + 4 : pos + 4 + size].decode("utf-8", "replace")
            pos += 4 + size
        elif tag == 2:
            pos += 4 + _length(block, pos)
        elif tag == 5:
            pos += 4
        else:
            raise QmError(f"unknown field tag {tag} in a message record")


def pairs(data: bytes) -> Iterator[tuple[str, str]]:
    """The (English, Italian) pairs of a catalogue, whitespace collapsed, empty sides skipped."""
    for msg in messages(data):
        src, tr = msg.get("src"), msg.get("tr")
        if not isinstance(src, str) or not isinstance(tr, list) or not tr:
            continue
        en, it = " ".join(src.split()), " ".join(tr[0].split())
        if en and it:
            yield en, it


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: python tools/qm_pairs.py CATALOGUE.qm [...] > pairs.tsv")
    for name in sys.argv[1:]:
        try:
            found = list(pairs(Path(name).read_bytes()))
        except (OSError, QmError) as err:
            sys.exit(f"error: {name}: {err}")
        for en, it in found:
            print(f"{en}\t{it}")


if __name__ == "__main__":
    main()
