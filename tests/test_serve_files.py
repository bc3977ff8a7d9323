"""``/translate_file`` and ``/download_file``: documents through the service (issue 39).

The shape is LibreTranslate's (multipart ``file``, ``source``, ``target``; the answer
``{"translatedFileUrl"}``; a GET of it gives the file), tried with the published
``libretranslate-aio`` client as well as by hand. With the shipped model a .docx and an .odt
with bold text and a link come back translated with their bold and link in place; the rest
(refusals, the download area's names and its clean-up) runs on the tiny untrained model.
"""

from __future__ import annotations

import io
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docx
import httpx
import pytest

from attenzione.serve import Batcher, Languages, Service, Settings
from attenzione.serve.files import FileStore, safe_name, valid_name
from attenzione.translator.translator import Translator
from serve_helpers import service_client, upload
from test_documents import TEXT_NS, add_link, make_odt, odt_paragraphs
from tiny_model import tiny_translator

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def _service(translator: Translator, root: Path, **settings: Any) -> Service:
    store = FileStore(root, ttl=600) if settings.get("files", True) else None
    return Service(
        Batcher(translator, max_queue=256),
        Languages(("en", "it")),
        Settings(**settings),
        None,
        store,
    )


def _translate_file(client: httpx.Client, name: str, data: bytes) -> bytes:
    r = client.post("/translate_file", **upload(name, data))
    assert r.status_code == 200, r.text
    url = r.json()["translatedFileUrl"]
    assert url.startswith(f"{str(client.base_url).rstrip('/')}/download_file/") and url.endswith(
        safe_name(name)
    )
    got = client.get(url)
    assert got.status_code == 200
    assert safe_name(name) in got.headers["content-disposition"]
    return got.content


def _docx(*runs: tuple[str, str]) -> bytes:
    """A one-paragraph .docx from (kind, text) runs: kind "", "bold" or a link's URL."""
    d = docx.Document()
    p = d.add_paragraph()
    for kind, text in runs:
        if kind.startswith("http"):
            add_link(p, kind, text)
        else:
            p.add_run(text).bold = kind == "bold"
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


# ---------------------------------------------------------------------- the shipped model
@pytest.fixture(scope="module")
def shipped() -> Iterator[Translator]:
    yield Translator.from_pretrained()


def test_a_docx_and_an_odt_come_back_translated_with_bold_and_link(
    shipped: Translator, tmp_path: Path
) -> None:
    source = _docx(
        ("", "The "),
        ("bold", "old"),
        ("", " house has "),
        ("https://example.com/x", "a big garden"),
        ("", "."),
    )
    odt = make_odt(
        '<text:p>The <text:span text:style-name="T1">old</text:span> house has '
        '<text:a xlink:href="https://example.com/x">a big garden</text:a>.</text:p>'
    )
    with service_client(_service(shipped, tmp_path)) as client:
        out = docx.Document(io.BytesIO(_translate_file(client, "report.docx", source)))
        translated_odt = _translate_file(client, "report.odt", odt)
    (p,) = out.paragraphs
    assert p.text != "The old house has a big garden." and "casa" in p.text
    (bold,) = [r.text for r in p.runs if r.bold]
    assert bold.strip() and bold.strip() != "old"
    (link,) = p.hyperlinks
    assert link.url == "https://example.com/x" and link.text.strip()
    (par,) = odt_paragraphs(translated_odt)
    (span,) = par.findall(f"{{{TEXT_NS}}}span")
    assert span.get(f"{{{TEXT_NS}}}style-name") == "T1" and (span.text or "").strip()
    (a,) = par.findall(f"{{{TEXT_NS}}}a")
    assert a.get("{http://www.w3.org/1999/xlink}href") == "https://example.com/x"
    assert "casa" in "".join(par.itertext())


def test_the_published_client_translates_a_file(shipped: Translator, tmp_path: Path) -> None:
    """libretranslate-aio's translate_file, unmodified."""
    from libretranslate_aio import LibreTranslate

    with service_client(_service(shipped, tmp_path / "area")) as http:
        lt = LibreTranslate(str(http.base_url).rstrip("/"))
        assert ".html" in lt.frontend_settings().supported_files_format
        page = tmp_path / "page.html"
        page.write_text("<p>The <b>cat</b> is sleeping.</p>", "utf-8")
        url = lt.translate_file(page, "en", "it").translated_file_url
        html = http.get(url).text
    assert "<b>" in html and "</b>" in html and "gatto" in html and "cat" not in html


# ---------------------------------------------------------------------- refusals (tiny model)
@pytest.fixture(scope="module")
def tiny() -> Translator:
    return tiny_translator()


@pytest.mark.parametrize(
    ("name", "data", "status", "needle"),
    [
        ("notes.pdf", b"%PDF-1.4", 400, ".docx"),  # the message lists what is supported
        ("broken.docx", b"PK\x03\x04 not a zip at all", 400, "docx"),
        ("broken.odt", random.Random(0).randbytes(300), 400, "odt"),  # the same bytes each run
        ("latin1.txt", "caffè".encode("latin-1"), 400, "UTF-8"),
        ("big.txt", b"the cat " * 40_000, 413, "exceeds"),
    ],
)
def test_bad_files_are_one_line_errors(
    tiny: Translator, tmp_path: Path, name: str, data: bytes, status: int, needle: str
) -> None:
    service = _service(tiny, tmp_path / "area", file_limit=100_000)
    with service_client(service) as client:
        r = client.post("/translate_file", **upload(name, data))
    assert r.status_code == status, r.text
    message = r.json()["error"]
    assert needle in message and "\n" not in message and "Traceback" not in message
    area = tmp_path / "area"
    assert not area.exists() or not any(area.iterdir())  # nothing stored


def test_missing_file_languages_and_too_many_characters_are_400(
    tiny: Translator, tmp_path: Path
) -> None:
    with service_client(_service(tiny, tmp_path, file_chars=20)) as client:
        r = client.post("/translate_file", data={"source": "en", "target": "it"})
        assert r.status_code == 400 and "file" in r.json()["error"]
        r = client.post("/translate_file", **upload("a.txt", b"the cat", target="de"))
        assert r.status_code == 400 and "de is not supported" in r.json()["error"]
        long = b"the cat is on the table\nthe dog is in the house\n"
        r = client.post("/translate_file", **upload("a.txt", long))
        assert r.status_code == 400 and "limit of 20" in r.json()["error"]
        r = client.post("/translate_file", json={"source": "en", "target": "it"})
        assert r.status_code == 400 and "multipart" in r.json()["error"]


def test_files_off_is_a_403_and_the_settings_say_so(tiny: Translator, tmp_path: Path) -> None:
    with service_client(_service(tiny, tmp_path, files=False)) as client:
        r = client.post("/translate_file", **upload("a.txt", b"the cat"))
        assert r.status_code == 403 and r.json()["error"] == (
            "Files translation are disabled on this server."
        )
        settings = (client.get("/frontend/settings")).json()
    assert settings["filesTranslation"] is False and settings["supportedFilesFormat"] == []


def test_the_settings_list_the_formats(tiny: Translator, tmp_path: Path) -> None:
    with service_client(_service(tiny, tmp_path)) as client:
        settings = (client.get("/frontend/settings")).json()
    assert settings["filesTranslation"] is True
    assert {".txt", ".html", ".docx", ".odt", ".srt"} <= set(settings["supportedFilesFormat"])


# ---------------------------------------------------------------------- the download area
def test_downloads_never_reach_outside_the_area(tiny: Translator, tmp_path: Path) -> None:
    area = tmp_path / "area"
    (tmp_path / "secret.txt").write_text("secret", "utf-8")
    with service_client(_service(tiny, area)) as client:
        r = client.post("/translate_file", **upload("../../secret.txt", b"the cat"))
        assert r.status_code == 200, r.text
        url = r.json()["translatedFileUrl"]
        name = url.rsplit("/", 1)[1]
        assert name.endswith(".secret.txt") and (area / name).is_file()
        for bad in (
            "../secret.txt",
            "..%2Fsecret.txt",
            "%2E%2E%2Fsecret.txt",
            "0" * 32 + ".secret.txt",  # well formed, never issued
            name.replace(".secret", "/../secret"),
        ):
            got = client.get(f"/download_file/{bad}")
            assert got.status_code == 404, bad
            assert "secret" not in got.text.replace(bad, "")
        assert (client.get(url)).status_code == 200


def test_a_document_past_its_time_is_a_503_and_the_worker_goes_on(
    tiny: Translator, tmp_path: Path
) -> None:
    """The timeout cancels the sentences still waiting; the worker drops them and lives."""
    lines = b"".join(f"the cat is on the table {i}\n".encode() for i in range(300))
    with service_client(_service(tiny, tmp_path, file_timeout=0.001)) as client:
        r = client.post("/translate_file", **upload("long.txt", lines))
        assert r.status_code == 503 and "longer than" in r.json()["error"]
        after = client.post("/translate", json={"q": "the cat", "source": "en", "target": "it"})
        assert after.status_code == 200, after.text
        assert client.get("/health").json()["worker"]["failed_batches"] == 0


def test_a_full_download_area_is_a_503(tiny: Translator, tmp_path: Path) -> None:
    store = FileStore(tmp_path, ttl=600, max_bytes=100)
    kept = store.put(b"x" * 95, "earlier.txt")  # the area holds 95 of its 100 bytes
    service = Service(Batcher(tiny, max_queue=64), Languages(("en", "it")), Settings(), None, store)
    with service_client(service) as client:
        r = client.post("/translate_file", **upload("b.txt", b"the dog is in the house\n"))
        assert r.status_code == 503 and "full" in r.json()["error"], r.text
        assert r.headers["retry-after"]
        assert client.get(f"/download_file/{kept}").content == b"x" * 95
    assert [p.name for p in tmp_path.iterdir()] == [kept]


def test_a_service_makes_no_directory_until_a_file_is_stored(tiny: Translator) -> None:
    service = Service(Batcher(tiny, max_queue=8), Languages(("en", "it")), Settings())
    assert service.files is not None and service.files._root is None
    assert service.files.get("0" * 32 + ".a.txt") is None and service.files._root is None
    name = service.files.put(b"x", "a.txt")
    assert (service.files.root / name).read_bytes() == b"x"
    service.files.close()
    assert not service.files.root.exists()


def test_safe_names() -> None:
    for odd in ("-report.docx", "--x.txt", "-.srt", ".hidden", "a..b.txt", "_", "x" * 300):
        assert valid_name("0" * 32 + "." + safe_name(odd)), odd
    assert safe_name("../../etc/my report.docx") == "my_report.docx"
    assert safe_name("C:\\Users\\me\\notes.TXT") == "notes.txt"
    assert safe_name("...") == "document"
    assert safe_name("ünïcode näme.odt") == "ünïcode_näme.odt"  # letters of any script kept
    assert len(safe_name("x" * 500 + ".html")) <= 100 and safe_name("x" * 500 + ".html").endswith(
        ".html"
    )


def test_stored_files_are_removed_after_their_time(tmp_path: Path) -> None:
    store = FileStore(tmp_path, ttl=60)
    old = store.put(b"old", "a.txt")
    new = store.put(b"new", "b.txt")
    past = time.time() - 120
    os.utime(tmp_path / old, (past, past))  # written two minutes ago
    assert store.get(old) is None and not (tmp_path / old).exists()
    fresh = store.get(new)
    assert fresh is not None and fresh.read_bytes() == b"new"
    (tmp_path / "kept.txt").write_text("not ours", "utf-8")
    os.utime(tmp_path / "kept.txt", (past, past))
    store.sweep()
    assert (tmp_path / "kept.txt").exists()  # only the store's own names are removed
    store.close()
    assert tmp_path.exists()  # a directory the store did not make stays
    made = FileStore(ttl=60)
    made.put(b"x", "x.txt")
    made.close()
    assert not made.root.exists()
