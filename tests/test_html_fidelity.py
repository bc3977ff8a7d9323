"""Markup that is not translated comes back as the user wrote it (issue 64, items 14 and 13).

``format=html`` of ``/translate`` and ``.html`` documents rewrote what they do not translate:
a doctype's internal subset (``<!DOCTYPE html [ <!ENTITY x "y"> ]>``) lost its end into the
text, a CDATA section its last ``]``, a marked section of an unknown kind was a 500. Now every
byte outside the translated text is the source's — while entities stay what they were:
never defined, never expanded, no file read (XXE), no "billion laughs". And a document too
deep or too large for the XML reader is one line about the file, not the parser's option
names (``XML_PARSE_HUGE``).
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from attenzione.documents import DocumentError, read_document
from attenzione.serve import Batcher, Languages, Service, Settings
from attenzione.serve.files import FileStore
from attenzione.serve.text import assemble, plan_html
from serve_helpers import service_client, upload
from test_documents import make_docx, make_odt
from tiny_model import tiny_translator

SUBSET = '<!DOCTYPE html [ <!ENTITY x "y"> <!-- a > b --> <!ENTITY z "]>"> ]>'
KEPT = [  # markup of every kind the service's html does not translate, as a user wrote it
    "<![CDATA[ a < b ]]>",
    "<![if !IE]>",
    "<![endif]>",
    "<![foo[ z ]]>",
    "<!x y>",
    "</>",
    "</P >",
    "<?php echo 1; ?>",
    "<!-- c -- d -->",
    "<BR/>",
    "<code>&copy; &lt; a < b</code>",
    "<span translate=no>&nbsp;x&#160;</span>",
]


def identity(markup: str) -> tuple[str, list[str]]:
    """``markup`` through the service's html plan with each sentence "translated" as itself;
    and the sentences the translator would have been sent."""
    plan = plan_html(markup)
    sentences = [p.text for p in plan if p.sentence]
    return assemble(plan, sentences, escape=True), sentences


@pytest.mark.parametrize("kept", KEPT)
def test_the_service_keeps_untranslated_markup_byte_for_byte(kept: str) -> None:
    markup = f"{SUBSET}\n<p>Hello {kept} world.</p>"
    out, sentences = identity(markup)
    assert out == markup
    assert all("]>" not in s and "ENTITY" not in s and "a < b" not in s for s in sentences)


def test_an_element_left_open_keeps_its_content() -> None:
    # html.parser keeps the content of an unclosed <script> waiting; it was dropped
    markup = "<p>Hi there.</p><script>var x = 1 < 2"
    assert identity(markup)[0] == markup


@pytest.fixture
def service(tmp_path: Path) -> Service:
    store = FileStore(tmp_path / "files", ttl=600)
    return Service(
        Batcher(tiny_translator(), max_queue=256), Languages(("en", "it")), Settings(), None, store
    )


def test_format_html_over_http_keeps_the_doctype_and_cdata(service: Service) -> None:
    body = "<p>the cat <![CDATA[ a < b ]]> is here.</p><p>a <![foo[ z ]]> b</p>"
    markup = SUBSET + body
    with service_client(service) as client:
        r = client.post("/translate", json={"q": markup, "source": "en", "target": "it",
                                            "format": "html"})  # fmt: skip
    assert r.status_code == 200, r.text
    out = r.json()["translatedText"]
    assert out.startswith(SUBSET + "<p>")  # the subset whole, and nothing of it translated
    assert "<![CDATA[ a < b ]]>" in out and "<![foo[ z ]]>" in out
    assert out.count("</p>") == 2


# ---------------------------------------------------------------- .html documents
PAGE = f"""<!-- made by hand -->
{SUBSET}
<html><head><title>My page</title></head><body>
<p>Hello <![CDATA[ a < b ]]> world.</p>
<p>Before <?php echo 1; ?> after <![if !IE]>shown<![endif]> end.</p>
<svg><![CDATA[ <x> ]]></svg><p>Last <!x y> words.</p>
</body></html>
<!-- the end -->
"""


def test_an_html_document_keeps_untranslated_markup_byte_for_byte() -> None:
    data = PAGE.encode()
    doc = read_document(data, "page.html")
    assert "ENTITY" not in " ".join(doc.segments) and "a < b" not in " ".join(doc.segments)
    assert "Hello" in doc.segments and "words." in doc.segments
    assert doc.write(doc.segments) == data  # every byte: doctype, comments, CDATA, PI
    out = doc.write([s.upper() for s in doc.segments]).decode()
    assert out.startswith(f"<!-- made by hand -->\n{SUBSET}\n<html>")
    assert "<p>HELLO <![CDATA[ a < b ]]> WORLD.</p>" in out
    assert "<svg><![CDATA[ <x> ]]></svg>" in out and out.endswith("</html>\n<!-- the end -->\n")
    # a fragment too
    fragment = b"<p>Hi <![CDATA[ a < b ]]> there.</p>"
    doc = read_document(fragment, "f.html")
    assert doc.write(["Ciao", "lì."]) == b"<p>Ciao <![CDATA[ a < b ]]> l\xc3\xac.</p>"


# ---------------------------------------------------------------- entities stay inert
def test_entities_are_never_defined_nor_expanded(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    xxe = f'<!DOCTYPE x [<!ENTITY xxe SYSTEM "file://{secret}">]>'
    lol = '<!DOCTYPE x [<!ENTITY a "aaaaaaaaaa">' + "".join(
        f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(8)
    ) + "]>"  # fmt: skip
    for doctype, ref in [(xxe, "&xxe;"), (lol, "&i;")]:
        page = f"{doctype}<html><body><p>Hello {ref} world.</p></body></html>".encode()
        doc = read_document(page, "page.html")
        out = doc.write(doc.segments)
        assert out.startswith(doctype.encode()) and b"TOPSECRET" not in out
        assert b"aaaaaaaaaa" * 10 not in out and len(out) < 2 * len(page)
        served, sentences = identity(page.decode())
        assert served.startswith(doctype + "<html><body><p>") and "TOPSECRET" not in served
        assert ref in " ".join(sentences)  # a reference the page never defined: text
    # in the zipped formats' XML: a reference is never resolved, a bomb is refused
    odt = _with_doctype(make_odt("<text:p>Hello &xxe; world</text:p>"), "content.xml", xxe)
    doc = read_document(odt, "a.odt")
    assert "TOPSECRET" not in " ".join(doc.segments)
    assert b"TOPSECRET" not in _unzipped(doc.write(doc.segments))
    for data, name in [
        (_with_doctype(make_odt("<text:p>Hello &i; world</text:p>"), "content.xml", lol), "a.odt"),
        (_with_doctype(make_docx(), "word/document.xml", lol, "&i;"), "a.docx"),
    ]:
        message = _one_line(data, name)
        assert "entities that expand without end" in message
        assert "xmlCtxt" not in message and "<string>" not in message


def _with_doctype(data: bytes, part: str, doctype: str, ref: str = "") -> bytes:
    """``data`` (a zip) with ``doctype`` after the XML declaration of ``part`` (and ``ref``
    in place of its first paragraph's first word, for a .docx)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as zin, zipfile.ZipFile(out, "w") as z:
        for info in zin.infolist():
            body = zin.read(info.filename)
            if info.filename == part:
                body = body.replace(b"?>", b"?>" + doctype.encode(), 1)
                if ref:
                    body = body.replace(b">The annual", b">" + ref.encode() + b" annual", 1)
            z.writestr(info, body)
    return out.getvalue()


def _unzipped(data: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return b"".join(z.read(n) for n in z.namelist())


def _one_line(data: bytes, name: str) -> str:
    with pytest.raises(DocumentError) as info:
        read_document(data, name)
    message = str(info.value)
    assert "\n" not in message and "XML_PARSE" not in message and "<string>" not in message
    return message


# ---------------------------------------------------------------- 13: the XML reader's limits
def _deep_docx() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(make_docx())) as zin, zipfile.ZipFile(out, "w") as z:
        for info in zin.infolist():
            body = zin.read(info.filename)
            if info.filename == "word/document.xml":
                nested = b"<w:customXml>" * 300 + b"</w:customXml>" * 300
                body = body.replace(b"<w:body>", b"<w:body>" + nested, 1)
            z.writestr(info, body)
    return out.getvalue()


def test_a_document_too_deep_for_the_xml_reader_is_one_line_about_the_file() -> None:
    deep = "<text:span>" * 300 + "x" + "</text:span>" * 300
    for data, name in [
        (make_odt(f"<text:p>{deep}</text:p>"), "report.odt"),
        (_deep_docx(), "report.docx"),
        (b"<p>Hello world.</p>" + b"<div>" * 300 + b"<p>Deep words.</p>", "page.html"),
    ]:
        message = _one_line(data, name)
        assert "nested more than 256 levels deep" in message, message
    # html was read as far as the limit and written back without the rest: "Deep words." lost


def test_a_text_too_long_for_the_xml_reader_is_one_line_about_the_file() -> None:
    message = _one_line(make_odt("<text:p>" + "a" * 10_000_001 + "</text:p>"), "big.odt")
    assert "a text too long to read in one piece" in message, message


def test_the_service_answers_a_too_deep_document_in_one_line(service: Service) -> None:
    data = b"<p>Hello world.</p>" + b"<div>" * 300 + b"<p>Deep words.</p>"
    with service_client(service) as client:
        r = client.post("/translate_file", **upload("page.html", data))
    assert r.status_code == 400, r.text
    assert r.json()["error"].startswith("Invalid request: not a valid .html file: its elements")
