"""Reading a request's fields the way LibreTranslate's clients send them — all of the ways.

The clients disagree: ``libretranslatepy`` and ``libretranslate-aio`` post urlencoded forms
(the latter sends a list as repeated ``q`` fields), ``deep-translator`` puts everything in the
query string with an empty body, Mastodon and the npm client post JSON, and a browser form
may post multipart. FastAPI cannot declare one endpoint that takes all of these, so the
endpoints read the raw request here: JSON (which must be an object) or form fields, with the
query string filling in what the body does not give. Repeated ``q`` fields become a list.
As LibreTranslate, ``q`` from a form or the query string gets Unix line endings (``\r\n``
and a lone ``\r`` become ``\n``, so that the character limit counts a line break once);
JSON text is left as sent.

The body must arrive within the server's read timeout (408 and the connection closed,
else a client trickling a byte at a time holds a connection for ever); a body declared
larger than the limit is refused from its ``Content-Length`` (413, see :func:`read_body`).

Every problem becomes :class:`ApiError` with LibreTranslate's status and a message naming the
field; nothing a client sends can raise anything else out of this module.
"""

from __future__ import annotations

import asyncio
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


async def read_body(request: Request, max_bytes: int, timeout: float | None = None) -> bytes:
    """The body, refused with 413 past ``max_bytes`` without keeping the rest in memory,
    and with 408 (the connection closed) when it takes longer than ``timeout`` seconds."""
    try:
        async with asyncio.timeout(timeout):
            return await _body(request, max_bytes)
    except TimeoutError:
        raise ApiError(
            408,
            f"Request timeout: the body did not arrive within {timeout:g} s",
            {"Connection": "close"},
        ) from None


async def _body(request: Request, max_bytes: int) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        size = int(declared)
        message = f"Invalid request: body of {size} bytes exceeds {max_bytes}"
        expects = request.headers.get("expect", "").lower() == "100-continue"
        if expects or size > DRAIN_FACTOR * max_bytes:
            # At once, from the header: the body is not waited for (a client that asked
            # "100-continue" has not even sent it), and the connection is closed after.
            raise ApiError(413, message, {"Connection": "close"})
        await _discard(request)
        raise ApiError(413, message)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:  # keep reading (and dropping) the rest: see _discard
            chunks.clear()
            if size > DRAIN_FACTOR * max_bytes:
                raise ApiError(
                    413, f"Invalid request: body exceeds {max_bytes} bytes", {"Connection": "close"}
                )
            continue
        chunks.append(chunk)
    if size > max_bytes:
        raise ApiError(413, f"Invalid request: body exceeds {max_bytes} bytes")
    return b"".join(chunks)


DRAIN_FACTOR = 16
"""An oversized body up to this many times the limit is read (and dropped) before the 413;
past it, the 413 comes at once and the connection is closed."""


async def _discard(request: Request) -> None:
    """Read and drop the rest of a moderately oversized body (its declared length is at
    most :data:`DRAIN_FACTOR` times the limit; the read timeout bounds the time).

    Answering 413 while the client is still sending makes the server close a connection
    with unread data, and the client then sees a reset instead of the answer; draining
    first lets it finish sending and read the 413. Nothing is kept in memory.
    """
    async for _ in request.stream():
        pass


def _unix_lines(key: str, value: str) -> str:
    """``q`` with LibreTranslate's line endings for a form or query string (RFC 2046 says
    form text has CRLF line breaks; LT turns them into LF before counting characters)."""
    if key != "q":
        return value
    return value.replace("\r\n", "\n").replace("\r", "\n")


async def _form(request: Request, body: bytes, **limits: int) -> Any:
    """The form in ``body`` (already read), parsed by starlette from a replay of it; a
    broken body is a 400."""
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    try:
        return await Request(request.scope, receive).form(**limits)
    except Exception as exc:  # python-multipart raises several types for broken bodies
        raise ApiError(400, f"Invalid form data: {exc}") from None


async def read_fields(
    request: Request, max_bytes: int, timeout: float | None = None
) -> dict[str, Any]:
    """The request's fields: JSON values as sent, form and query values as strings
    (a repeated field as a list of strings)."""
    body = await read_body(request, max_bytes, timeout)
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    fields: dict[str, Any] = {}
    try:
        for key in request.query_params:
            values = [_unix_lines(key, v) for v in request.query_params.getlist(key)]
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
        form = await _form(request, body)
        for key in form:
            texts: list[str] = []
            for v in form.getlist(key):
                if not isinstance(v, str):
                    raise ApiError(400, f"Invalid request: {key} must be text, not a file")
                texts.append(_unix_lines(key, v))
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


def get_int(
    fields: dict[str, Any], name: str, default: int | None, *, loose: bool = False
) -> int | None:
    """An integer field; absent, null or ``""`` is ``default``.

    ``loose``: whatever Python's ``int()`` takes, as LibreTranslate reads ``alternatives``
    (``int(value)``): ``2.5`` → 2, ``true`` → 1, ``" 2 "`` and ``"+2"`` → 2; a string
    ``int()`` refuses (``"2.5"``, ``"1e3"``) is a 400 here, where LibreTranslate fails with
    a 500 for JSON. Otherwise only an integer or a string of one.
    """
    value = fields.get(name)
    if value is None or value == "":
        return default
    if isinstance(value, Repeated):
        value = value[0]
    if loose and isinstance(value, bool | int | float | str):
        try:
            return int(value)
        except (ValueError, OverflowError):
            pass
    elif isinstance(value, int) and not isinstance(value, bool):
        return value
    elif isinstance(value, str):
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


async def read_upload(
    request: Request, max_bytes: int, timeout: float | None = None
) -> tuple[dict[str, Any], tuple[str, bytes] | None]:
    """A multipart upload (``/translate_file``): its text fields (the query string filling
    in), and its one ``file`` as (file name, bytes), or None when there is none."""
    body = await read_body(request, max_bytes, timeout)
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    fields: dict[str, Any] = {}
    try:
        for key in request.query_params:
            fields[key] = request.query_params.get(key)
    except UnicodeDecodeError:
        raise ApiError(400, "Invalid request: the query string is not valid UTF-8") from None
    if ctype != "multipart/form-data":
        raise ApiError(400, "Invalid request: send the file as multipart/form-data")
    form = await _form(request, body, max_part_size=max_bytes)
    upload: tuple[str, bytes] | None = None
    for key in form:
        values = form.getlist(key)
        if key == "file":
            if len(values) != 1 or isinstance(values[0], str):
                raise ApiError(400, "Invalid request: send exactly one file, as the file field")
            part = values[0]
            upload = (part.filename or "", await part.read())
            await part.close()
        elif any(not isinstance(v, str) for v in values):
            raise ApiError(400, f"Invalid request: {key} must be text, not a file")
        else:
            fields[key] = values[-1]
    return fields, upload
