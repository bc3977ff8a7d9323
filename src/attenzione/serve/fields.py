"""Reading a request's fields the way LibreTranslate's clients send them — all of the ways.

The clients disagree: ``libretranslatepy`` and ``libretranslate-aio`` post urlencoded forms
(the latter sends a list as repeated ``q`` fields), ``deep-translator`` puts everything in the
query string with an empty body, Mastodon and the npm client post JSON, and a browser form
may post multipart. FastAPI cannot declare one endpoint that takes all of these, so the
endpoints read the raw request here: JSON (which must be an object) or form fields, with the
query string filling in what the body does not give. Repeated ``q`` fields become a list.

Every problem becomes :class:`ApiError` with LibreTranslate's status and a message naming the
field; nothing a client sends can raise anything else out of this module.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request

TRUE = {"true", "1", "yes", "on"}
FALSE = {"false", "0", "no", "off", ""}


class Repeated(list[str]):
    """A form or query field given several times (JSON lists stay plain lists)."""


class ApiError(Exception):
    """An answer for the client: ``{"error": message}`` with ``status``."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


async def _body(request: Request, max_bytes: int) -> bytes:
    """The body, refused with 413 past ``max_bytes`` without reading the rest into memory."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        await _discard(request, 16 * max_bytes)
        raise ApiError(413, f"Invalid request: body of {declared} bytes exceeds {max_bytes}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:  # keep reading (and dropping) the rest: see _discard
            chunks.clear()
            if size > 16 * max_bytes:
                break
            continue
        chunks.append(chunk)
    if size > max_bytes:
        raise ApiError(413, f"Invalid request: body exceeds {max_bytes} bytes")
    return b"".join(chunks)


async def _discard(request: Request, limit: int) -> None:
    """Read and drop the rest of an oversized body (up to ``limit`` bytes).

    Answering 413 while the client is still sending makes the server close a connection
    with unread data, and the client then sees a reset instead of the answer; draining
    first lets it finish sending and read the 413. Nothing is kept in memory.
    """
    seen = 0
    async for chunk in request.stream():
        seen += len(chunk)
        if seen > limit:
            return


async def read_fields(request: Request, max_bytes: int) -> dict[str, Any]:
    """The request's fields: JSON values as sent, form and query values as strings
    (a repeated field as a list of strings)."""
    body = await _body(request, max_bytes)
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    fields: dict[str, Any] = {}
    try:
        for key in request.query_params:
            values = request.query_params.getlist(key)
            fields[key] = Repeated(values) if len(values) > 1 else values[0]
    except UnicodeDecodeError:
        raise ApiError(400, "Invalid request: the query string is not valid UTF-8") from None
    if ctype == "application/json" or ctype.endswith("+json"):
        try:
            data = json.loads(body) if body.strip() else None
        except (ValueError, RecursionError) as exc:
            raise ApiError(400, f"Invalid JSON format: {exc}") from None
        if not isinstance(data, dict):
            raise ApiError(400, "Invalid JSON format: the body must be a JSON object")
        fields.update(data)
        return fields
    if ctype in ("application/x-www-form-urlencoded", "multipart/form-data") and body:
        replay_sent = False

        async def receive() -> dict[str, Any]:
            nonlocal replay_sent
            if replay_sent:
                return {"type": "http.disconnect"}
            replay_sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        try:
            form = await Request(request.scope, receive).form()
        except Exception as exc:  # python-multipart raises several types for broken bodies
            raise ApiError(400, f"Invalid form data: {exc}") from None
        for key in form:
            texts: list[str] = []
            for v in form.getlist(key):
                if not isinstance(v, str):
                    raise ApiError(400, f"Invalid request: {key} must be text, not a file")
                texts.append(v)
            fields[key] = Repeated(texts) if len(texts) > 1 else texts[0]
    return fields


def _check_text(name: str, value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ApiError(400, f"Invalid request: {name} is not valid Unicode text") from None
    return value


def get_q(fields: dict[str, Any]) -> tuple[list[str], bool]:
    """(texts, batch): ``q`` as a list, and whether the client sent a list."""
    q = fields.get("q")
    if q is None or q == "" or q == []:
        raise ApiError(400, "Invalid request: missing q parameter")
    if isinstance(q, str):
        return [_check_text("q", q)], False
    if isinstance(q, list) and all(isinstance(t, str) for t in q):
        return [_check_text("q", t) for t in q], True
    raise ApiError(400, "Invalid request: q must be a string or a list of strings")


def get_str(fields: dict[str, Any], name: str, default: str | None = None) -> str | None:
    value = fields.get(name, default)
    if value is None:
        return default
    if isinstance(value, Repeated):  # a repeated form field: the first, as LibreTranslate
        value = value[0]
    if not isinstance(value, str):
        raise ApiError(400, f"Invalid request: {name} must be a string")
    return _check_text(name, value)


def get_int(fields: dict[str, Any], name: str, default: int | None) -> int | None:
    value = fields.get(name)
    if value is None or value == "":
        return default
    if isinstance(value, Repeated):
        value = value[0]
    if isinstance(value, bool):
        raise ApiError(400, f"Invalid request: {name} parameter is not a number")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise ApiError(400, f"Invalid request: {name} parameter is not a number")


def get_bool(fields: dict[str, Any], name: str) -> bool:
    value = fields.get(name, False)
    if isinstance(value, Repeated):
        value = value[0]
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in TRUE | FALSE:
        return value.strip().lower() in TRUE
    raise ApiError(400, f"Invalid request: {name} must be true or false")
