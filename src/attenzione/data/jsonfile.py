"""JSON files a user or a download gave us, read whole: a damaged one is a one-line
ValueError naming the file and where it broke, never a parser's traceback nor its bytes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_json(path: Path) -> Any:
    """The JSON value in ``path`` (UTF-8)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:  # says where, not what: "line 1 column 2 (char 1)"
        raise ValueError(f"{path} is not valid JSON: {exc}") from None


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; any other JSON value is a ValueError too."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path} should hold a JSON object, not {type(data).__name__}")
    return data
