"""The service's part of issue 53 (reliability, round three): translated files that survive a
restart, auto-detection that knows text already in the target language, Unicode file names,
a bounded beam, and the lines view on a phone.

Each test sends what a user sent and checks what the user gets back: the real server for
what only a process shows (a restart, SIGTERM, start-up), the service around the tiny
untrained model for the rest.
"""

from __future__ import annotations

import hashlib
import os
import signal
import stat
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import pytest
from typer.testing import CliRunner

from attenzione.cli import app
from attenzione.serve import Batcher, Languages, Service, Settings
from attenzione.serve.fields import ApiError
from attenzione.serve.files import FileStore, default_dir, safe_name, valid_name
from attenzione.translator.bounds import Bounds
from attenzione.translator.translator import Translator
from serve_helpers import chrome, running_server, service_client, upload, with_worker
from tiny_model import tiny_translator


@pytest.fixture(scope="module")
def tiny() -> Translator:
    return tiny_translator()


def _service(translator: Translator, store: FileStore | None = None, **settings: Any) -> Service:
    """An en→it service of ``translator`` (with a download area ``store``, for files)."""
    return Service(
        Batcher(translator, max_queue=256),
        Languages(("en", "it")),
        Settings(**settings),
        None,
        store,
    )


# ---------------------------------------------------------------------- 8. files survive
def _area(tmp: Path) -> Path:
    """The download area of :func:`running_server` on ``tmp`` (its XDG cache directory)."""
    return tmp / "cache" / "attenzione" / "files"


@pytest.mark.timeout(600)
def test_a_translated_file_survives_a_restart_and_sigterm_drains_downloads(
    tmp_path: Path,
) -> None:
    """A client answered 200 by ``/translate_file`` downloads its file after the service
    was stopped (SIGTERM) and started again; a download under way when SIGTERM arrives
    finishes; a file past its time is a 404."""
    area = _area(tmp_path)
    big_name = "f" * 32 + ".big.txt"
    big = hashlib.sha256(b"attenzione").hexdigest().encode() * (40 * 1024 * 1024 // 64)
    with running_server(tmp_path) as first:
        r = httpx.post(
            first.url + "/translate_file",
            **upload("notes.txt", b"the cat is here.\nthe old dog is there.\n"),
            timeout=120,
        )
        assert r.status_code == 200, r.text
        path = urlsplit(r.json()["translatedFileUrl"]).path
        before = httpx.get(first.url + path, timeout=60)
        assert before.status_code == 200 and before.content
        # the area is private, and so is every file in it
        assert stat.S_IMODE(area.stat().st_mode) == 0o700
        assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in area.iterdir())
        # a large file, as the store writes them (expiry in an hour), downloaded slowly
        (area / big_name).write_bytes(big)
        os.utime(area / big_name, (time.time() + 3600,) * 2)
        got = bytearray()
        with httpx.stream("GET", f"{first.url}/download_file/{big_name}", timeout=60) as down:
            assert down.status_code == 200
            chunks = down.iter_raw(64 * 1024)
            got += next(chunks)
            first.proc.send_signal(signal.SIGTERM)  # the download is under way
            time.sleep(1.0)
            for chunk in chunks:
                got += chunk
        assert first.proc.wait(60) == 0, first.output()
        assert bytes(got) == big
    with running_server(tmp_path) as second:  # a new process, the same area
        after = httpx.get(second.url + path, timeout=60)
        assert after.status_code == 200, after.text
        assert after.content == before.content
        assert after.headers["content-disposition"] == before.headers["content-disposition"]
        # its announced lifetime over: removed, and a 404
        stored = area / Path(path).name
        os.utime(stored, (time.time() - 1,) * 2)
        gone = httpx.get(second.url + path, timeout=60)
        assert gone.status_code == 404 and not stored.exists()


def test_the_store_keeps_each_files_expiry_whatever_the_next_ttl(tmp_path: Path) -> None:
    area = tmp_path / "made" / "files"
    first = FileStore(area, ttl=3600)
    name = first.put(b"kept", "a.txt")
    assert stat.S_IMODE(area.stat().st_mode) == 0o700  # made private
    first.close()
    assert (area / name).is_file()  # a store that did not make a temporary area keeps it
    # the next process runs with a shorter ttl: the file keeps the hour it was given
    second = FileStore(area, ttl=1)
    found = second.get(name)
    assert found is not None and found.read_bytes() == b"kept"
    os.utime(area / name, (time.time() - 1,) * 2)  # its hour is over
    assert second.get(name) is None and not (area / name).exists()


def test_the_default_area_is_in_the_users_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere/cache")
    assert default_dir() == Path("/somewhere/cache/attenzione/files")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_dir() == Path.home() / ".cache" / "attenzione" / "files"


# ---------------------------------------------------------------------- 6. detection
def test_short_italian_into_italian_comes_back_as_it_is(tiny: Translator) -> None:
    """ "Buonasera, come stai?" is Italian (40 %), not English (2 %): into Italian it is
    returned unchanged, not "translated from English" into garbage."""
    svc = _service(tiny)
    text = "Buonasera, come stai?"
    answer = with_worker(svc, svc.translate({"q": text, "source": "auto", "target": "it"}, "c"))
    assert answer["translatedText"] == text
    assert answer["detectedLanguage"]["language"] == "it"
    assert answer["detectedLanguage"]["confidence"] > 30
    # html and the extensions too: kept as it is, nothing decoded
    svc = _service(tiny)
    fields = {"q": "<p>Grazie mille</p>", "source": "auto", "target": "it", "format": "html"}
    answer = with_worker(svc, svc.translate({**fields, "scores": True, "attention": True}, "c"))
    assert answer["translatedText"] == "<p>Grazie mille</p>"
    assert answer["scores"]["sentences"] == [] and answer["attention"] == []
    assert svc.batcher.snapshot()["sentences"] == 0


def test_a_list_gets_one_detection_per_item(tiny: Translator) -> None:
    svc = _service(tiny)
    texts = ["Buonasera, come stai?", "My brother lives in Rome with his old dog."]
    fields = {"q": texts, "source": "auto", "target": "it"}
    answer = with_worker(svc, svc.translate(fields, "c"))
    assert [d["language"] for d in answer["detectedLanguage"]] == ["it", "en"]
    assert answer["translatedText"][0] == texts[0]
    assert answer["translatedText"][1] != texts[1]  # English: translated
    assert svc.batcher.snapshot()["sentences"] == 1


def test_detect_lists_the_most_likely_first_and_one_list_per_item(tiny: Translator) -> None:
    svc = _service(tiny)
    ranked = svc.detect({"q": "Buonasera, come stai?"}, "c")
    assert ranked[0]["language"] == "it"
    confidences = [r["confidence"] for r in ranked]
    assert confidences == sorted(confidences, reverse=True)
    assert {"en", "it"} <= {r["language"] for r in ranked}
    per_item = svc.detect({"q": ["Buonasera, come stai?", "Where is the station?"]}, "c")
    assert [items[0]["language"] for items in per_item] == ["it", "en"]
    for items in per_item:
        assert [r["confidence"] for r in items] == sorted(
            (r["confidence"] for r in items), reverse=True
        )


def test_text_in_the_target_language_is_kept_and_toss_ups_are_still_sources() -> None:
    one = Languages(("en", "it"))
    for italian in ("Buonasera, come stai?", "Grazie mille", "Ciao, come va?", "Il gatto"):
        assert one.detect_source(italian, "it")["language"] == "it", italian
    for english in ("Hello!", "OK", "The cat", "Good morning", "I love pizza and pasta"):
        assert one.detect_source(english, "it")["language"] == "en", english
    both = Languages(("en", "it"), ("it", "en"))
    assert both.detect_source("Thank you", "en")["language"] == "en"  # already English
    assert both.detect_source("Buonasera, come stai?", "en")["language"] == "it"


def test_a_document_already_in_the_target_language_comes_back_as_it_is(
    tiny: Translator, tmp_path: Path
) -> None:
    svc = _service(tiny, store=FileStore(tmp_path, ttl=600))
    text = b"Buonasera, come stai?\n\nIl gatto dorme sul divano del salotto.\n"
    with service_client(svc) as client:
        fields = {"source": "auto", "target": "it"}
        r = client.post("/translate_file", files={"file": ("nota.txt", text)}, data=fields)
        assert r.status_code == 200, r.text
        assert client.get(r.json()["translatedFileUrl"]).content == text
        assert client.get("/health").json()["worker"]["sentences"] == 0


# ---------------------------------------------------------------------- 12. Unicode names
def test_unicode_file_names_are_kept_in_the_download(tiny: Translator, tmp_path: Path) -> None:
    svc = _service(tiny, store=FileStore(tmp_path, ttl=600))
    with service_client(svc) as client:
        r = client.post("/translate_file", **upload("Résumé café 猫.txt", b"the cat is here."))
        assert r.status_code == 200, r.text
        url = r.json()["translatedFileUrl"]
        assert url.endswith("." + quote("Résumé_café_猫.txt"))
        got = client.get(url)
    assert got.status_code == 200 and got.content
    disposition = got.headers["content-disposition"]
    assert disposition == (
        "attachment; filename=\"Resume_cafe.txt\"; filename*=UTF-8''"
        + quote("Résumé_café_猫.txt", safe="")
    )


def test_safe_names_keep_letters_of_every_script_and_nothing_dangerous() -> None:
    assert safe_name("Résumé café 猫.txt") == "Résumé_café_猫.txt"
    assert safe_name("Re\u0301sume\u0301.TXT") == "Résumé.txt"  # decomposed accents joined
    assert safe_name("хорошо/../../отчёт.docx") == "отчёт.docx"
    assert safe_name("a\x00b\x1b\u202ec\u2028d.txt") == "a_b_c_d.txt"  # controls, bidi
    assert safe_name("..\\..\\नमस्ते.odt") == "नमस्ते.odt"  # marks of Devanagari kept
    long = safe_name("猫" * 300 + ".html")
    assert long.endswith(".html") and len(long.encode()) <= 160 and len(long) <= 100
    for odd in ("Résumé café 猫.txt", "../x.txt", "\u202e.txt", "猫" * 300, "-_-.srt"):
        name = "0" * 32 + "." + safe_name(odd)
        assert valid_name(name), odd
        assert "/" not in name and "\\" not in name and ".." not in name
    assert not valid_name("0" * 32 + ".a/b.txt") and not valid_name("0" * 32 + ". a.txt")


# ---------------------------------------------------------------------- 2. a bounded beam
def test_serve_refuses_a_beam_wider_than_the_machine_at_start_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import attenzione.cli.serve as cli_serve

    def started(*_: Any) -> None:
        raise AssertionError("the server started")

    monkeypatch.setattr(cli_serve, "_run", started)
    for args in (["--beam", "50000"], ["--alternatives-limit", "50000"]):
        res = CliRunner().invoke(app, ["serve", "--port", "5999", "--threads", "1", *args])
        assert res.exit_code == 2, (args, res.output, res.exception)
        lines = [ln for ln in res.output.splitlines() if ln.startswith("error:")]
        assert len(lines) == 1 and "50000" in lines[0] and "at most" in lines[0], res.output
        assert "Traceback" not in res.output


def test_a_search_wider_than_the_bound_is_a_400_not_a_500(tmp_path: Path) -> None:
    translator = tiny_translator().replace(bounds=Bounds(max_rows=4))  # a "machine" of 4 rows
    store = FileStore(tmp_path, ttl=600)
    svc = _service(translator, store=store, alternatives_limit=-1, beam=2)
    with service_client(svc) as client:
        fields = {"q": "the cat", "source": "en", "target": "it", "alternatives": 7}
        r = client.post("/translate", json=fields)
        assert r.status_code == 400, r.text
        message = r.json()["error"]
        assert "at most 4" in message and "\n" not in message
        ok = client.post("/translate", json={**fields, "alternatives": 2})
        assert ok.status_code == 200, ok.text
        assert client.get("/health").json()["worker"]["failed_batches"] == 0


def test_a_beam_the_model_refuses_in_the_worker_is_a_400() -> None:
    """Whatever the checks before it, a search refused inside the worker is the client's
    to fix: a 400, never a 500."""
    translator = tiny_translator().replace(bounds=Bounds(max_rows=1))
    svc = _service(translator, beam=1)
    svc._check_bounds = lambda route, decoding: None  # type: ignore[method-assign]
    fields = {"q": "the cat", "source": "en", "target": "it", "alternatives": 1}
    with pytest.raises(ApiError) as err:
        with_worker(svc, svc.translate(fields, "c"))
    assert err.value.status == 400 and "at most 1" in err.value.message


# ---------------------------------------------------------------------- 11. lines on a phone
def test_the_lines_view_is_drawn_to_fit_its_box() -> None:
    from attenzione.viz.html import _asset

    css, js = _asset("viewer.css"), _asset("viewer.js")
    assert "svg.lines { display: block; max-width: 100%; height: auto; }" in css
    assert "viewBox: `0 0 ${width} ${height}`" in js


@pytest.mark.timeout(300)
def test_the_lines_view_fits_a_phone_in_headless_chromium(tmp_path: Path) -> None:
    """At 390 px the keys' side of the lines view is on the screen, not past its edge."""
    from selenium.webdriver.common.by import By

    from attenzione.viz.html import save_html

    translator = tiny_translator()
    maps = translator.attention("the old red cat is here .", "il gatto rosso vecchio è qui .")
    page = save_html(maps, tmp_path / "attention.html")
    driver = chrome(390, 844)
    try:
        metrics = {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True}
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
        driver.get(page.as_uri())
        view = driver.find_element(By.ID, "view")
        svg = driver.find_element(By.CSS_SELECTOR, "svg.lines")
        right = view.rect["x"] + view.rect["width"]
        assert svg.rect["x"] + svg.rect["width"] <= right + 0.5
        keys = driver.find_elements(By.CSS_SELECTOR, "svg.lines text.ktok")
        assert keys and all(k.rect["x"] + k.rect["width"] <= right + 0.5 for k in keys)
        assert driver.execute_script("return document.documentElement.scrollWidth") <= 390
    finally:
        driver.quit()
