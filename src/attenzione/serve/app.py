"""The HTTP layer: FastAPI routes that parse, check, wait and answer — nothing more.

Every route reads the raw request (:mod:`.fields`), hands the fields to the
:class:`~attenzione.serve.service.Service` and turns its answer into JSON, or its
:class:`~attenzione.serve.fields.ApiError` into ``{"error": "…"}`` with the status
LibreTranslate uses. Anything unexpected becomes a 500 with a one-line message and the
traceback goes to the server's log, never to the client; a client that hangs up before
its body has arrived is one ``info`` line, not an error. A client that hangs up while its
text or document is being translated stops that work (:func:`unless_gone`): what it still
had queued for the worker is dropped, so the worker moves on to requests someone waits for
and a shutdown does not wait for it. CORS is open (``*``), as
LibreTranslate's, so that a page on another origin can call the service. A 405 names the
allowed methods (``Allow``), and every GET route answers HEAD too.

Served besides the API: the page at ``/`` (the live translator and attention viewer,
self-contained), the OpenAPI document at ``/spec`` (and ``/openapi.json``), and interactive
docs at ``/docs`` whose Swagger UI files come from the ``swagger-ui-bundle`` package on disk:
no page here loads anything from the network.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from attenzione.serve.fields import ApiError, read_body, read_fields, read_upload
from attenzione.serve.files import MEDIA_TYPES, ascii_name
from attenzione.serve.page import docs_html, lazy_asset, page_html
from attenzione.serve.service import Service
from attenzione.serve.spec import openapi_spec

log = logging.getLogger("attenzione.serve")
GET = ["GET", "HEAD"]  # uvicorn sends no body for HEAD
T = TypeVar("T")


class Gone(Exception):
    """The client hung up before its answer was ready: nobody is left to answer."""


async def _hung_up(request: Request) -> None:
    """Return when the client disconnects. Called once the body has been read: the server
    then has nothing more to give but the news that the connection is gone."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def unless_gone(
    request: Request, work: Awaitable[T], counted: Callable[[], None] = lambda: None
) -> T:
    """``work``'s result, unless the client hangs up first: then ``work`` is cancelled (the
    service drops what it queued for the worker), ``counted`` called and :class:`Gone`
    raised."""
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_hung_up(request))
    try:
        await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        if not task.done():
            task.cancel()
            with suppress(asyncio.CancelledError, Exception):
                await task
    if task.cancelled():
        counted()
        raise Gone()
    return task.result()


def _swagger_dir() -> Path | None:
    try:
        import swagger_ui_bundle
    except ImportError:
        return None
    return Path(swagger_ui_bundle.swagger_ui_path)


class _CountInFlight:
    """Pure ASGI middleware counting the HTTP requests being answered (for ``/health`` and
    the shutdown message); cheaper than a ``@app.middleware`` wrapper on every request."""

    def __init__(self, app: ASGIApp, state: Any) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.state.in_flight += 1
        done = False

        def finish() -> None:
            nonlocal done
            if not done:
                done = True
                self.state.in_flight -= 1

        async def counted_send(message: Message) -> None:
            # A request stops counting as its last byte is handed over, before the client
            # can see it: a client that got its answer never finds itself still counted.
            if message["type"] == "http.response.body" and not message.get("more_body"):
                finish()
            await send(message)

        try:
            await self.app(scope, receive, counted_send)
        finally:
            finish()


def disposition(filename: str) -> str:
    """``Content-Disposition`` for a download named ``filename`` (RFC 6266): an ASCII
    ``filename`` for old clients and the real name, Unicode and all, as RFC 5987's
    ``filename*``."""
    utf8 = quote(filename, safe="")
    return f"attachment; filename=\"{ascii_name(filename)}\"; filename*=UTF-8''{utf8}"


def create_app(service: Service) -> FastAPI:
    """The application around a ready :class:`Service` (its worker is started and stopped
    with the application's lifespan)."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        service.languages.load()
        if service.files is not None:
            service.files.sweep()  # what expired while no process served the area
        service.batcher.start()
        try:
            yield
        finally:
            service.batcher.stop()  # finishes everything admitted (uvicorn has drained HTTP)
            if service.files is not None:
                service.files.close()

    app = FastAPI(
        title="attenzione",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.in_flight = 0
    app.add_middleware(_CountInFlight, state=app.state)
    app.add_middleware(
        CORSMiddleware,
        allow_origins=["*"],
        allow_methods=["GET", "POST"],
        allow_headers=["Authorization", "Content-Type"],
        expose_headers=["Authorization"],
    )
    spec = openapi_spec(service)
    max_body = service.settings.max_body
    read_timeout = service.settings.read_timeout

    @app.exception_handler(ApiError)
    async def api_error(_: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse({"error": exc.message}, status_code=exc.status, headers=exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        # exc.headers carries the 405's Allow (starlette names the route's methods).
        return JSONResponse(
            {"error": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers
        )

    @app.exception_handler(ClientDisconnect)
    async def hung_up(request: Request, _: ClientDisconnect) -> Response:
        # Nobody is left to answer: one line, no traceback (a client closing a tab, a
        # timeout on its side); the status is only what the access log would show.
        log.info(
            "client %s disconnected before sending the whole body of %s %s",
            client(request),
            request.method,
            request.url.path,
        )
        return Response(status_code=499)

    @app.exception_handler(Gone)
    async def gone(request: Request, _: Gone) -> Response:
        log.info(
            "client %s disconnected while %s %s was being translated: its work is dropped",
            client(request),
            request.method,
            request.url.path,
        )
        return Response(status_code=499)

    @app.exception_handler(Exception)
    async def crash(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return JSONResponse({"error": f"Internal error: {type(exc).__name__}"}, status_code=500)

    def client(request: Request) -> str:
        return request.client.host if request.client else "unknown"

    @app.post("/suggest")
    async def suggest(request: Request) -> JSONResponse:
        # As LibreTranslate with suggestions off (frontend/settings says so): 403 before
        # anything else; the body is read first so that the client can finish sending.
        await read_body(request, max_body, read_timeout)
        raise ApiError(403, "Suggestions are disabled on this server.")

    @app.post("/translate_file")
    async def translate_file(request: Request) -> JSONResponse:
        if service.files is None:  # as LibreTranslate: refused before the upload is read
            raise ApiError(403, "Files translation are disabled on this server.")
        # an upload may take longer than a text: the read timeout plus 64 KiB/s of its limit
        limit = service.settings.file_limit
        fields, upload = await read_upload(request, limit + 64 * 1024, read_timeout + limit / 65536)
        name = await unless_gone(
            request,
            service.translate_file(fields, upload, client(request)),
            service.batcher.request_cancelled,
        )
        url = f"{request.base_url}download_file/{quote(name)}"  # a name may be "猫.txt"
        return JSONResponse({"translatedFileUrl": url})

    @app.api_route("/download_file/{name}", methods=GET)
    async def download_file(name: str) -> Response:
        path = service.files.get(name) if service.files is not None else None
        if path is None or service.files is None:
            raise ApiError(404, "No such file: translated files are kept for a while, then removed")
        suffix = Path(name).suffix.lower()
        return FileResponse(
            path,
            media_type=MEDIA_TYPES.get(suffix, "application/octet-stream"),
            headers={"Content-Disposition": disposition(service.files.download_name(name))},
        )

    @app.post("/translate")
    async def translate(request: Request) -> JSONResponse:
        fields = await read_fields(request, max_body, read_timeout)
        work = service.translate(fields, client(request))
        return JSONResponse(await unless_gone(request, work, service.batcher.request_cancelled))

    @app.post("/trace")
    async def trace(request: Request) -> JSONResponse:
        fields = await read_fields(request, max_body, read_timeout)
        work = service.trace(fields, client(request))
        return JSONResponse(await unless_gone(request, work, service.batcher.request_cancelled))

    def one_sentence(path: str, name: str) -> None:
        """POST ``path``: the service's ``name`` (our extensions that look inside the model:
        those that follow one sentence, and the embedding space)."""

        async def route(request: Request) -> JSONResponse:
            fields = await read_fields(request, max_body, read_timeout)
            work = getattr(service, name)(fields, client(request))
            return JSONResponse(await unless_gone(request, work, service.batcher.request_cancelled))

        app.add_api_route(path, route, methods=["POST"], name=name)

    for path, name in (
        ("/journey", "journey"),
        ("/training", "training"),
        ("/occlusion", "occlusion"),
        ("/embeddings", "embeddings"),
    ):
        one_sentence(path, name)

    @app.post("/detect")
    async def detect(request: Request) -> JSONResponse:
        fields = await read_fields(request, max_body, read_timeout)
        return JSONResponse(service.detect(fields, client(request)))

    @app.api_route("/languages", methods=GET)
    async def languages() -> JSONResponse:
        return JSONResponse(service.languages.listing())

    @app.api_route("/frontend/settings", methods=GET)
    async def frontend_settings() -> JSONResponse:
        return JSONResponse(service.frontend_settings())

    @app.api_route("/health", methods=GET)
    async def health() -> JSONResponse:
        return JSONResponse(
            {
                "status": "ok",
                "in_flight_requests": app.state.in_flight - 1,  # not counting this one
                "worker": service.batcher.snapshot(),
                "models": service.models(),
            }
        )

    @app.api_route("/spec", methods=GET)
    @app.api_route("/openapi.json", methods=GET)
    async def spec_json() -> JSONResponse:
        return JSONResponse(spec)

    @app.api_route("/docs", methods=GET)
    async def docs() -> HTMLResponse:
        return HTMLResponse(docs_html(_swagger_dir() is not None))

    @app.api_route("/docs/assets/{name}", methods=GET)
    async def docs_asset(name: str) -> Response:
        folder = _swagger_dir()
        allowed = {"swagger-ui-bundle.js", "swagger-ui.css"}
        if folder is None or name not in allowed:
            raise ApiError(404, f"no such file: {name}")
        return FileResponse(folder / name)

    @app.api_route("/assets/{name}", methods=GET)
    async def page_asset(name: str) -> Response:
        found = lazy_asset(name)
        if found is None:
            raise ApiError(404, f"no such file: {name}")
        text, kind = found
        headers = {"Cache-Control": "public, max-age=3600"}
        return Response(text, media_type=f"{kind}; charset=utf-8", headers=headers)

    @app.api_route("/", methods=GET)
    async def page() -> HTMLResponse:
        return HTMLResponse(page_html(service.page_settings()))

    return app
