"""``attenzione serve``: the translation service (LibreTranslate's API) and the live page.

Besides the options, this module configures uvicorn (:func:`server_config`): proxy headers
(``X-Forwarded-For``) are believed only from the addresses the operator names with
``--forwarded-allow-ips`` — uvicorn would otherwise believe them from 127.0.0.1, and any
local client could pick its own rate-limit bucket — and its HTTP/1.1 protocol is uvicorn's
h11 one with three answers added: 431 for headers over :data:`HEADER_LIMIT` bytes (uvicorn
says 400), 408 for headers that do not arrive within ``--read-timeout``, and a *lingering*
close after either (the rest of what the client is sending is read and dropped for a moment,
so that it reads the answer instead of a connection reset).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from attenzione.cli.common import (
    check_number_flags,
    check_steps,
    fail,
    language_code,
    no_step_option,
    number_format_of,
    number_format_option,
    pipeline_of,
    raw_option,
    shortlist_option,
    tag_option,
    user_errors,
)

HEADER_LIMIT = 16 * 1024
"""Bytes of request line and headers a request may have (h11's default); past it, 431."""
LINGER_S = 2.0
"""How long a connection answered 400/408/431 keeps reading (and dropping) before closing."""


def _protocol(read_timeout: float | None) -> type:
    """uvicorn's h11 protocol with 431, a timeout for headers (408) and lingering closes."""
    import h11
    from uvicorn.protocols.http.h11_impl import STATUS_PHRASES, H11Protocol

    class Protocol(H11Protocol):
        _header_timer: Any = None
        _lingering = False

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self._lingering:  # answered and closing: drop what is still arriving
                return
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:  # the headers are in (or broken)
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self._arm()  # the next request's headers are timed too

        def send_400_response(self, msg: str) -> None:
            # h11 gives up past its limit with "Receive buffer too long" (its status hint
            # is 431, which uvicorn drops); whatever it holds unparsed tells which it was.
            if len(self.conn.trailing_data[0]) > HEADER_LIMIT:
                status, msg = 431, "Request header fields too large"
            else:
                status = 400
            for event in (
                h11.Response(
                    status_code=status,
                    headers=[
                        (b"content-type", b"text/plain; charset=utf-8"),
                        (b"connection", b"close"),
                    ],
                    reason=STATUS_PHRASES[status],
                ),
                h11.Data(data=msg.encode("ascii")),
                h11.EndOfMessage(),
            ):
                self.transport.write(self.conn.send(event))
            self._linger()

        def _arm(self) -> None:
            self._disarm()
            if read_timeout is not None:
                self._header_timer = self.loop.call_later(read_timeout, self._headers_late)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_late(self) -> None:
            self._header_timer = None
            if self.conn.their_state is not h11.IDLE or self.transport.is_closing():
                return
            if not self.conn.trailing_data[0]:  # an idle keep-alive connection: just close
                self.transport.close()
                return
            # No request was parsed, so h11 has nothing to answer: the bytes by hand.
            text = f"Request timeout: the headers did not arrive within {read_timeout:g} s"
            self.transport.write(
                b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                b"connection: close\r\ncontent-length: %d\r\n\r\n%s"
                % (len(text), text.encode("ascii"))
            )
            self._linger()

        def _linger(self) -> None:
            """Close after the answer, but read and drop for a moment first: closing with
            unread data would reset the connection and lose the answer."""
            self._lingering = True
            if self.transport.can_write_eof():
                self.transport.write_eof()
            self.loop.call_later(LINGER_S, self.transport.close)

    return Protocol


def server_config(
    app: Any,
    *,
    host: str,
    port: int,
    log_level: str,
    forwarded_allow_ips: str | None = None,
    read_timeout: float | None = 30.0,
) -> Any:
    """uvicorn's configuration for ``app``: proxy headers only from ``forwarded_allow_ips``
    (comma-separated addresses or networks; None: from nowhere), header and read limits."""
    import uvicorn

    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        workers=1,
        http=_protocol(read_timeout),
        h11_max_incomplete_event_size=HEADER_LIMIT,
        proxy_headers=forwarded_allow_ips is not None,
        forwarded_allow_ips=forwarded_allow_ips if forwarded_allow_ips is not None else "",
    )


def _limit(name: str, value: int) -> int:
    if value < -1 or value == 0:
        fail(f"{name} must be a positive number, or -1 for no limit (got {value})")
    return value


def _check_search(translator: Any, beam: int, alternatives_limit: int) -> None:
    """Refuse, in one line, a ``--beam`` or ``--alternatives-limit`` wider than the machine
    can search with this model (the request is made as the service makes it,
    :meth:`attenzione.translator.translator.Translator.request`): better at start-up than a
    request that grows until the machine swaps."""
    from attenzione.config import search_config

    for flag, value, n_best in (
        ("--beam", beam, 1),
        ("--alternatives-limit", alternatives_limit, alternatives_limit + 1),  # + the best
    ):
        try:
            translator.request(search=search_config(beam, max(1, n_best)))
        except ValueError as exc:
            fail(f"{flag} {value}: {exc}")


def serve(
    model: list[Path] = typer.Option(
        None,
        "--model",
        "-m",
        help="A model directory to serve; repeat it for several pairs (default: every "
        "installed model, `attenzione models`).",
    ),
    host: str = typer.Option("127.0.0.1", help="Address to listen on (0.0.0.0: every interface)."),
    port: int = typer.Option(5000, help="Port to listen on."),
    char_limit: int = typer.Option(5000, help="Characters per text (-1: no limit)."),
    batch_limit: int = typer.Option(100, help="Texts per request when q is a list (-1: none)."),
    req_limit: int = typer.Option(
        -1, help="Requests per minute per API key or client address (-1: no limit)."
    ),
    alternatives_limit: int = typer.Option(8, help="Most alternatives a request may ask for."),
    api_keys: Path | None = typer.Option(
        None,
        "--api-keys",
        help="File of API keys, one per line ('KEY [REQUESTS_PER_MINUTE]'); requests then "
        "need a key.",
    ),
    threads: int = typer.Option(
        0, help="Torch threads (0: the cores other processes leave free, at least 1)."
    ),
    precision: str = typer.Option("fp32", help="fp32 (reference), bf16 or int8."),
    shortlist: bool = shortlist_option(),
    beam: int = typer.Option(4, help="Beam size (1 = greedy), as `attenzione translate`."),
    queue_size: int = typer.Option(
        512,
        help="Sentences that may wait for the worker; past that, 503 (a request larger than "
        "the whole queue runs once the queue is empty).",
    ),
    batch_sentences: int = typer.Option(64, help="Most sentences in one decoding batch."),
    batch_tokens: int = typer.Option(4096, help="Most padded source tokens in one batch."),
    batch_wait_ms: float = typer.Option(
        30.0, help="How long the worker may wait for more sentences to share a batch."
    ),
    max_body: int = typer.Option(2 * 1024 * 1024, help="Largest request body in bytes."),
    read_timeout: float = typer.Option(
        30.0,
        help="Seconds a request's headers, and then its body, may take to arrive; past it, "
        "408 and the connection is closed (against clients that send slowly on purpose).",
    ),
    forwarded_allow_ips: str | None = typer.Option(
        None,
        help="Proxies whose X-Forwarded-For/-Proto to believe (comma-separated addresses or "
        "networks, '*' for any). Default: none, so a client cannot choose the address the "
        "request limit counts it under.",
    ),
    frontend_timeout: int = typer.Option(500, help="The page's typing debounce, milliseconds."),
    files: bool = typer.Option(
        True, "--files/--no-files", help="Translate documents (/translate_file) or refuse them."
    ),
    file_limit: int = typer.Option(10 * 1024 * 1024, help="Largest document in bytes."),
    file_chars: int = typer.Option(
        200_000, help="Most characters to translate in one document (-1: no limit)."
    ),
    file_timeout: float = typer.Option(600, help="Seconds one document may take (then 503)."),
    file_ttl: float = typer.Option(
        1800, help="Seconds a translated document waits for its download, then removed."
    ),
    files_max_bytes: int = typer.Option(
        1024**3, help="Most bytes of translated documents kept at once (then 503)."
    ),
    files_dir: Path | None = typer.Option(
        None,
        help="Where translated documents wait for their download, kept across restarts "
        "(default: ~/.cache/attenzione/files, or under $XDG_CACHE_HOME).",
    ),
    source_lang: str | None = typer.Option(
        None,
        help="The one model's source language (default: its info.json, else en).",
        callback=language_code,
    ),
    target_lang: str | None = typer.Option(
        None,
        help="The one model's target language (default: its info.json, else it).",
        callback=language_code,
    ),
    number_format: str = number_format_option(),
    no_step: list[str] = no_step_option(),
    raw: bool = raw_option(),
    tag: str | None = tag_option(),
    languages_: str | None = typer.Option(
        None,
        "--languages",
        help="Serve the pairs among these languages (comma-separated: en,it,de,fr), by a "
        "model of their own or through another language, as LibreTranslate's --load-only "
        "(default: every installed model, or the --model ones).",
    ),
    install_missing: bool = typer.Option(
        False,
        "--install",
        help="With --languages: first install (from the Hugging Face hub) the OPUS-MT models "
        "to and from English that the languages lack.",
    ),
    max_models: int = typer.Option(
        0,
        help="Most models loaded at once (0: no bound); past it the least recently used is "
        "unloaded. Each model is loaded when first asked for.",
    ),
    max_memory: int = typer.Option(
        0,
        help="Most megabytes of model weights loaded at once (0: no budget), as --max-models.",
    ),
    log_level: str = typer.Option("info", help="uvicorn's log level."),
) -> None:
    """Serve the models over HTTP: LibreTranslate's API, scores and attention, and a live page."""
    with user_errors():
        for name, value in (
            ("--char-limit", char_limit),
            ("--batch-limit", batch_limit),
            ("--req-limit", req_limit),
        ):
            _limit(name, value)
        if alternatives_limit < 0 or beam < 1 or threads < 0 or not 0 < port < 65536:
            fail("--alternatives-limit and --threads must be >= 0, --beam >= 1, --port 1..65535")
        if file_limit < 1 or files_max_bytes < 1 or not file_timeout > 0 or not file_ttl > 0:
            fail("--file-limit, --files-max-bytes, --file-timeout and --file-ttl must be positive")
        _limit("--file-chars", file_chars)
        if files_dir is not None and files_dir.exists() and not files_dir.is_dir():
            fail(f"--files-dir {files_dir} is not a directory")
        if not read_timeout > 0:
            fail(f"--read-timeout must be a positive number of seconds (got {read_timeout})")
        names = check_steps(no_step, raw)
        check_number_flags(number_format, names, raw)
        from attenzione.threads import apply_threads

        apply_threads(threads or None, long_running=True)  # before torch: its wait policy
        import torch

        from attenzione.serve import Batcher, Languages, Service, Settings, create_app
        from attenzione.serve.batcher import Route
        from attenzione.serve.files import FileStore, default_dir
        from attenzione.serve.limits import KeyRing
        from attenzione.serve.pool import Loader, ModelPool
        from attenzione.translator.model_dir import weights_bytes
        from attenzione.translator.registry import installed, pair_of
        from attenzione.translator.translator import Translator

        keys = KeyRing.from_file(api_keys) if api_keys is not None else None
        if max_models < 0 or max_memory < 0:
            fail("--max-models and --max-memory must be >= 0 (0: no bound)")
        if install_missing and not languages_:
            fail("--install fetches what --languages needs: give --languages en,de,…")
        wanted = _language_list(languages_) if languages_ else None
        if wanted and install_missing:
            _install_missing(wanted)
        directories = list(model) if model else [m.path for m in installed()]
        if wanted:
            directories = _serving(directories, wanted)
        if not directories:
            fail("no model is installed: give --model DIR")
        if (source_lang or target_lang) and len(directories) > 1:
            fail("--source-lang/--target-lang name the pair of one model: serve one --model")
        if number_format != "model" and len(directories) > 1:
            fail(
                "--number-format would write every model's numbers one way: serve one --model "
                "(each model writes its own target language's by default)"
            )

        def loader(directory: Path) -> Callable[[], Route]:
            def load() -> Route:
                translator = Translator.from_pretrained(
                    directory,
                    precision=precision,
                    shortlist=shortlist,
                    number_format=number_format_of(number_format),
                )
                steps, terms = pipeline_of(translator, names, raw)
                translator.translate([""], tag=tag)  # an unknown tag: one line, not later
                _check_search(translator, beam, alternatives_limit)
                return Route(translator, steps, terms, tag)

            return load

        loaders: dict[str, Loader] = {}
        pairs: list[tuple[str, str]] = []
        for directory in directories:
            if not (Path(directory) / "config.json").is_file():
                fail(f"{directory} is not a model directory (it has no config.json)")
            found = pair_of(Path(directory))
            pair = ((source_lang or found[0]).lower(), (target_lang or found[1]).lower())
            key = f"{pair[0]}-{pair[1]}"
            if key in loaders:
                fail(f"two models translate {key}: serve one of them ({directory})")
            loaders[key] = Loader(loader(Path(directory)), weights_bytes(directory))
            pairs.append(pair)
        pool = ModelPool(
            loaders, max_models=max_models or None, max_bytes=max_memory * 2**20 or None
        )
        languages = Languages(*pairs)
        batcher = Batcher(  # loads the first model now: its checks run before serving
            pool,
            max_queue=queue_size,
            max_sentences=batch_sentences,
            max_tokens=batch_tokens,
            max_wait=batch_wait_ms / 1000.0,
        )
        settings = Settings(
            char_limit=char_limit,
            batch_limit=batch_limit,
            req_limit=req_limit,
            alternatives_limit=alternatives_limit,
            beam=beam,
            max_body=max_body,
            frontend_timeout=frontend_timeout,
            read_timeout=read_timeout,
            files=files,
            file_limit=file_limit,
            file_chars=file_chars,
            file_timeout=file_timeout,
        )
        store = FileStore(files_dir or default_dir(), file_ttl, files_max_bytes) if files else None
        app = create_app(Service(batcher, languages, settings, keys, store))
        config = server_config(
            app,
            host=host,
            port=port,
            log_level=log_level,
            forwarded_allow_ips=forwarded_allow_ips,
            read_timeout=read_timeout,
        )
        import uvicorn

        class Server(uvicorn.Server):
            """uvicorn's server, saying what a SIGTERM/Ctrl-C will wait for."""

            def handle_exit(self, sig: int, frame: Any) -> None:
                if not self.should_exit:
                    typer.echo(
                        f"attenzione serve: stopping; finishing {app.state.in_flight} "
                        "request(s) in flight first",
                        err=True,
                    )
                super().handle_exit(sig, frame)

        through = ", ".join(f"{a}→{c} (via {b})" for (a, c), b in languages.pivots.items())
        if through:
            typer.echo(f"attenzione serve: through another language: {through}", err=True)
        typer.echo(
            f"attenzione serve: {', '.join(f'{s}→{t}' for s, t in languages.pairs)}, "
            f"{torch.get_num_threads()} torch threads, beam {beam}; "
            f"page and API at http://{host}:{port}/",
            err=True,
        )
        server = Server(config)
        _run(server, batcher)


def _language_list(text: str) -> list[str]:
    """``--languages en,it,de``: the codes, each checked, in order, without repeats."""
    codes = [c.strip().lower() for c in text.split(",") if c.strip()]
    for code in codes:
        if not (code.isascii() and code.isalpha() and 2 <= len(code) <= 3):
            fail(f"--languages: {code!r} is not a language code (two or three letters: en, de)")
    if len(set(codes)) < 2:
        fail("--languages needs at least two languages (en,it)")
    return list(dict.fromkeys(codes))


def _serving(directories: list[Path], languages: list[str]) -> list[Path]:
    """The model directories that serve the pairs among ``languages``: each model between two
    of them, and the two legs of each pair among them that only a pivot reaches."""
    from attenzione.translator.registry import pair_of, pivot_language

    by_pair = {pair_of(Path(d)): Path(d) for d in directories}
    chosen: dict[tuple[str, str], Path] = {}
    for a in languages:
        for c in languages:
            if a == c:
                continue
            if (a, c) in by_pair:
                chosen[(a, c)] = by_pair[(a, c)]
                continue
            b = pivot_language(a, c, by_pair)
            if b is not None:
                chosen[(a, b)] = by_pair[(a, b)]
                chosen[(b, c)] = by_pair[(b, c)]
    if not chosen:
        have = ", ".join(f"{s}-{t}" for s, t in by_pair) or "none"
        fail(
            f"no installed model translates between {', '.join(languages)} (installed: {have}); "
            "add --install to fetch them, or: attenzione models install SRC TGT"
        )
    return list(dict.fromkeys(chosen.values()))


def _install_missing(languages: list[str]) -> None:
    """Install the OPUS-MT models to and from English that ``languages`` lack (what pivoting
    through English needs for every pair among them), saying each one."""
    from attenzione.translator.install import install
    from attenzione.translator.registry import installed

    have = {m.pair for m in installed()}
    for code in languages:
        if code == "en":
            continue
        for source, target in (("en", code), (code, "en")):
            if f"{source}-{target}" in have:
                continue
            typer.echo(f"attenzione serve: installing {source}-{target} …", err=True)
            try:
                made = install(source, target)
            except ValueError as exc:
                fail(f"--install {source}-{target}: {exc}")
            typer.echo(f"attenzione serve: installed {made.pair} in {made.path}", err=True)


def _run(server: Any, batcher: Any) -> None:
    """HTTP in a second thread, the inference worker in this (the main) thread.

    Why this way round: torch decodes 20–30% slower when called from a thread other than the
    process's first (see :meth:`Batcher.run`). uvicorn only installs signal handlers from the
    main thread, so they are installed here and forwarded to it: SIGTERM or Ctrl-C stops new
    connections, lets the requests in flight finish, runs the app's shutdown (which stops the
    worker once its queue is empty), and the process exits 0.
    """
    import signal
    import threading

    batcher.in_caller = True

    def serve_http() -> None:
        try:
            server.run()
        finally:
            batcher.stop()  # also when uvicorn could not start (port taken): end the worker

    http = threading.Thread(target=serve_http, name="attenzione-http")
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, server.handle_exit)
    http.start()
    batcher.run()
    http.join()
    if not server.started:
        fail("the server could not start (is the port in use? see the message above)")
