"""Files a user or a download gave us: the JSON in them, read whole, and the members of a
directory, read only inside it. A damaged or hostile file is a one-line ValueError naming the
file and what is wrong, never a parser's traceback, nor its bytes, nor Python's internals.

Every JSON file of a model (``config.json``, ``info.json``, ``vocab.json``, the tokenizers'
and Hugging Face's configs) is read by :func:`read_json`, which refuses what the parser would
accept but the code after it could not live with: values nested deeper than
:data:`MAX_DEPTH` (100,000 nested lists used to raise a RecursionError at start-up, and one
that parsed could still raise one later, printing it back) and integers of more than
:data:`MAX_DIGITS` digits (Python's own limit answers with a paragraph about
``sys.set_int_max_str_digits``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# Deeper than any model file needs: the shipped info.json, whose warm starts nest, is 10 deep
MAX_DEPTH = 100
# More digits than any count, id or size has (2**64 has 20)
MAX_DIGITS = 30


class _LongNumber(ValueError):
    """An integer of more than MAX_DIGITS digits (its digit count in ``args[0]``)."""


def _int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_DIGITS:
        raise _LongNumber(digits)
    return int(text)


def read_json(path: Path) -> Any:
    """The JSON value in ``path`` (UTF-8), nested at most :data:`MAX_DEPTH` deep, its
    integers of at most :data:`MAX_DIGITS` digits."""
    deep = ValueError(
        f"{path} is nested more than {MAX_DEPTH} deep: no model file is (a damaged or hostile file)"
    )
    try:
        data = json.loads(path.read_text(encoding="utf-8"), parse_int=_int)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:  # says where, not what: "line 1 column 2 (char 1)"
        raise ValueError(f"{path} is not valid JSON: {exc}") from None
    except _LongNumber as exc:
        raise ValueError(
            f"{path} holds a number of {exc.args[0]} digits: no field of a model file has more "
            f"than {MAX_DIGITS}"
        ) from None
    except RecursionError:  # nested past the parser's own limit
        raise deep from None
    if not _depth_within(data, MAX_DEPTH):
        raise deep
    return data


def _depth_within(value: Any, limit: int) -> bool:
    """Whether ``value``'s lists and objects nest at most ``limit`` deep (walked without
    recursion, so any depth is measured)."""
    stack = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return False
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return True


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; any other JSON value is a ValueError too."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path} should hold a JSON object, not {type(data).__name__}")
    return data


def member(directory: str | Path, name: str) -> Path:
    """``directory/name``, checked to lie inside ``directory``: the path a loader may read.

    A model directory may come from anywhere (a download, a shared folder), so a link in it
    is not followed out of it: the weights (or ``src_tokenizer/``) as a symbolic link
    to a file elsewhere is a ValueError, and so is any file reached through such a link. The
    directory's own path is resolved first, so ``~/models/current -> v3`` (how people switch
    versions) loads, and a link that stays inside the directory is no escape and is read.
    Refusing every link would refuse those two and protect nothing more; following links
    anywhere would let a word list's error, say, read a file the user never meant to give.
    """
    path = Path(directory) / name
    try:
        root = Path(directory).resolve()
        inside = (root / name).resolve().is_relative_to(root)
    except RuntimeError:  # Python 3.11's word for a loop of links (3.13: OSError ELOOP)
        raise ValueError(f"{path} is a loop of symbolic links") from None
    if not inside:
        raise ValueError(
            f"{path} is a symbolic link that leads outside {directory}: a model directory's "
            "files must lie inside it (copy the file in instead)"
        )
    return path
