"""Documents keep their structure and inline formatting through translation (issue 39).

Each format is built here (python-docx writes a .docx, an .odt is zipped by hand), read with
:func:`read_document`, "translated" by a fake that upper-cases the text outside the tags (or
by a dictionary that moves them), written back and opened with the format's own reader. The
shipped model translates one small document per format: the text must come back Italian with
its bold and its link in place. The CLI's document mode and its refusals close the file.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable
from pathlib import Path

import docx
import lxml.html
import pytest
from docx.opc.constants import RELATIONSHIP_TYPE as RT
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from lxml import etree
from typer.testing import CliRunner, Result

from attenzione.cli import app
from attenzione.documents import FORMATS, Document, DocumentError, read_document
from attenzione.documents import base as documents_base
from attenzione.translator.translator import PRETRAINED_DIR
from tiny_model import tiny_translator

_TAG = re.compile(r"(<[^<>]*>)")


def upper(segment: str) -> str:
    """A fake translation: the text upper-cased, the tags as they were."""
    return "".join(p if _TAG.fullmatch(p) else p.upper() for p in _TAG.split(segment))


def translate(doc: Document, fn: Callable[[str], str] = upper) -> bytes:
    return doc.write([fn(s) for s in doc.segments])


# ---------------------------------------------------------------- builders
def add_link(paragraph: object, url: str, text: str) -> None:
    """A w:hyperlink to ``url`` around one run in Word's Hyperlink style."""
    r_id = paragraph.part.relate_to(url, RT.HYPERLINK, is_external=True)  # type: ignore[attr-defined]
    link = OxmlElement("w:hyperlink")
    link.set(qn("r:id"), r_id)
    run = OxmlElement("w:r")
    rpr = OxmlElement("w:rPr")
    style = OxmlElement("w:rStyle")
    style.set(qn("w:val"), "Hyperlink")
    rpr.append(style)
    run.append(rpr)
    t = OxmlElement("w:t")
    t.text = text
    run.append(t)
    link.append(run)
    paragraph._p.append(link)  # type: ignore[attr-defined]


def make_docx(
    sentences: tuple[str, str, str, str] = ("The ", "red", " house has ", "a link"),
) -> bytes:
    """A heading; "The **red** house has [a link](https://example.com/x)."; a paragraph
    with a line break and an italic word; a table; a header."""
    d = docx.Document()
    d.add_heading("The annual report", 1)
    before, bold, middle, link = sentences
    p = d.add_paragraph(before)
    p.add_run(bold).bold = True
    p.add_run(middle)
    add_link(p, "https://example.com/x", link)
    p.add_run(".")
    p2 = d.add_paragraph("First line\nthe second ")
    p2.add_run("line").italic = True
    table = d.add_table(rows=1, cols=2)
    table.cell(0, 0).text = "Cell text"
    table.cell(0, 1).text = "42"
    d.sections[0].header.paragraphs[0].text = "Header words"
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


ODF_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:fo="urn:oasis:names:xsl:formatting-objects:xmlns:xsl-fo-compatible:1.0" '
    'xmlns:xlink="http://www.w3.org/1999/xlink" office:version="1.3"'
)
TEXT_NS = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"


def make_odt(body: str, header: str = "Header words") -> bytes:
    """An .odt whose body is ``body`` (ODF XML, style T1 bold and T2 italic), with a page
    header, a manifest and a picture entry, zipped as LibreOffice does."""
    content = f"""<?xml version="1.0" encoding="UTF-8"?>
<office:document-content {ODF_NS}><office:automatic-styles>
<style:style style:name="T1" style:family="text"><style:text-properties fo:font-weight="bold"/>
</style:style><style:style style:name="T2" style:family="text">
<style:text-properties fo:font-style="italic"/></style:style></office:automatic-styles>
<office:body><office:text>{body}</office:text></office:body></office:document-content>"""
    styles = f"""<?xml version="1.0" encoding="UTF-8"?>
<office:document-styles {ODF_NS}><office:master-styles><style:master-page style:name="Standard">
<style:header><text:p>{header}</text:p></style:header></style:master-page>
</office:master-styles></office:document-styles>"""
    manifest = """<?xml version="1.0" encoding="UTF-8"?>
<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">
<manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.text"/>
</manifest:manifest>"""  # noqa: E501
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(
            zipfile.ZipInfo("mimetype"),
            "application/vnd.oasis.opendocument.text",
            zipfile.ZIP_STORED,
        )
        z.writestr("content.xml", content)
        z.writestr("styles.xml", styles)
        z.writestr("Pictures/dot.png", b"\x89PNG not really")
        z.writestr("META-INF/manifest.xml", manifest)
    return out.getvalue()


ODT_BODY = (
    '<text:h text:outline-level="1">The annual report</text:h>'
    '<text:p>The <text:span text:style-name="T1">red</text:span> house has '
    '<text:a xlink:type="simple" xlink:href="https://example.com/x">a link</text:a>.</text:p>'
    '<text:p>First line<text:line-break/>the <text:span text:style-name="T2">second</text:span>'
    "<text:s/> line<text:tab/>42</text:p>"
)


def odt_paragraphs(data: bytes, part: str = "content.xml") -> list[etree._Element]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        root = etree.fromstring(z.read(part))
    return [el for el in root.iter() if el.tag in (f"{{{TEXT_NS}}}p", f"{{{TEXT_NS}}}h")]


# ---------------------------------------------------------------- .txt and .srt
def test_txt_keeps_every_line_and_its_ending() -> None:
    src = "\ufeffThe cat sleeps.\r\n\n   Indented line here.  \n----\n42\nLast line"
    doc = read_document(src.encode(), "notes.TXT")
    assert doc.segments == ["The cat sleeps.", "Indented line here.", "Last line"]
    out = translate(doc).decode("utf-8")
    assert out == "\ufeffTHE CAT SLEEPS.\r\n\n   INDENTED LINE HERE.  \n----\n42\nLAST LINE"


SRT = (
    "1\r\n00:00:01,000 --> 00:00:03,500\r\nThe red house is on the\r\n<i>left</i> of the road.\r\n"
    "\r\n2\r\n00:00:04,000 --> 00:00:06,000\r\n- Hello there.\r\n- Good morning.\r\n\r\n"
    "3\r\n00:00:07,000 --> 00:00:08,000\r\n♪ ♪\r\n"
)


def test_srt_keeps_numbers_timings_and_line_count() -> None:
    doc = read_document(SRT.encode(), "film.srt")
    assert doc.segments == [
        "The red house is on the <i>left</i> of the road.",
        "- Hello there.",
        "- Good morning.",
    ]
    out = translate(doc).decode("utf-8")
    cues = out.split("\r\n\r\n")
    assert [c.split("\r\n")[:2] for c in cues] == [
        s.split("\r\n")[:2] for s in SRT.split("\r\n\r\n")
    ]
    first = cues[0].split("\r\n")[2:]
    assert len(first) == 2 and " ".join(first) == "THE RED HOUSE IS ON THE <i>LEFT</i> OF THE ROAD."
    assert cues[1].split("\r\n")[2:] == ["- HELLO THERE.", "- GOOD MORNING."]
    assert cues[2] == "3\r\n00:00:07,000 --> 00:00:08,000\r\n♪ ♪\r\n"


# ---------------------------------------------------------------- .html
PAGE = b"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>My page</title><style>p { color: red }</style>
<script>var greeting = "Hello world";</script></head>
<body>
<h1><a id="top"></a>Welcome home</h1>
<p class="intro">Click <b>Save</b> to keep <a href="https://x.org/a?b=1&amp;c=2">the
   <i>new</i> file</a>.<br>Second line here.</p>
<ul><li>Run <code>ls -l</code> to list</li><li>42</li></ul>
<pre>do not touch</pre>
<p translate="no">Brand Name</p>
<p>a &lt; b is true</p>
</body></html>"""


def test_html_keeps_scripts_attributes_and_links() -> None:
    doc = read_document(PAGE, "page.html")
    assert doc.segments == [
        "My page",
        "Welcome home",
        'Click <b id="0">Save</b> to keep <a id="1">the <i id="2">new</i> file</a>.',
        "Second line here.",
        "Run",
        "to list",
        "a < b is true",
    ]
    out = translate(doc)
    assert out.startswith(b"<!DOCTYPE html>")
    root = lxml.html.document_fromstring(out)
    assert root.findtext(".//title") == "MY PAGE"
    assert root.findtext(".//script") == 'var greeting = "Hello world";'
    assert root.findtext(".//style") == "p { color: red }"
    assert root.findtext(".//pre") == "do not touch"
    assert root.findtext(".//code") == "ls -l"
    assert root.find(".//h1/a").get("id") == "top"
    p = root.find(".//p")
    assert p.get("class") == "intro"
    assert p.findtext("b") == "SAVE"
    assert p.find("a").get("href") == "https://x.org/a?b=1&c=2"
    assert p.find("a").text_content() == "THE NEW FILE"
    assert p.find("a/i").text == "NEW"
    assert p.find("br").tail == "SECOND LINE HERE."
    assert root.xpath("//p[@translate='no']")[0].text == "Brand Name"
    assert root.xpath("//p")[-1].text == "A < B IS TRUE"


def test_html_tags_follow_the_words_they_were_put_around() -> None:
    doc = read_document(b'<p>The <b class="x">red</b> <a href="/h">house</a>.</p>', "f.html")
    assert doc.segments == ['The <b id="0">red</b> <a id="1">house</a>.']
    out = doc.write(['La <a id="1">casa</a> <b id="0">rossa</b>.'])
    assert out == b'<p>La <a href="/h">casa</a> <b class="x">rossa</b>.</p>'  # still a fragment
    # a translation that lost its tags loses only their formatting, never text
    assert doc.write(["La casa rossa."]) == b"<p>La casa rossa.</p>"
    assert doc.write(["La <b>casa</b> rossa."]) == b"<p>La &lt;b&gt;casa&lt;/b&gt; rossa.</p>"


def test_html_is_read_and_written_in_its_declared_charset() -> None:
    page = '<html><head><meta charset="iso-8859-1"></head><body><p>Café here</p></body></html>'
    doc = read_document(page.encode("latin-1"), "old.htm")
    assert doc.segments == ["Café here"]
    out = doc.write(["Caffè qui ’ok’ 中"])
    # read and written as browsers read a page labelled Latin-1: windows-1252, and a
    # character it cannot hold as a reference
    assert "Caffè qui ’ok’ &#20013;".encode("cp1252") in out
    assert out.startswith(b"<html>")  # no doctype added where there was none
    quoted = read_document(b'<meta charset="iso-8859-1"><p>It\x92s \x80 5.</p>', "a.html")
    assert quoted.segments == ["It’s € 5."]


# ---------------------------------------------------------------- .docx
def test_docx_keeps_bold_italic_links_tables_and_headers() -> None:
    data = make_docx()
    doc = read_document(data, "report.docx")
    assert doc.segments == [
        "The annual report",
        'The <b id="2">red</b> house has <a id="0">a link</a>.',
        "First line",
        'the second <i id="1">line</i>',
        "Cell text",
        "Header words",
    ]
    out = docx.Document(io.BytesIO(translate(doc)))
    heading, p, p2 = out.paragraphs[:3]
    assert heading.text == "THE ANNUAL REPORT" and heading.style.name == "Heading 1"
    assert p.text == "THE RED HOUSE HAS A LINK."
    assert [r.text for r in p.runs if r.bold] == ["RED"]
    (link,) = p.hyperlinks
    assert (link.url, link.text) == ("https://example.com/x", "A LINK")
    assert link.runs[0]._r.xpath("./w:rPr/w:rStyle/@w:val") == ["Hyperlink"]  # its rPr, copied
    assert p2.text == "FIRST LINE\nTHE SECOND LINE"  # the line break is where it was
    assert [r.text for r in p2.runs if r.italic] == ["LINE"]
    assert out.tables[0].cell(0, 0).text == "CELL TEXT" and out.tables[0].cell(0, 1).text == "42"
    assert out.sections[0].header.paragraphs[0].text == "HEADER WORDS"
    assert len(out.styles) == len(docx.Document(io.BytesIO(data)).styles)


def test_docx_formatting_moves_with_its_tag() -> None:
    doc = read_document(make_docx(), "report.docx")
    fixed = {
        doc.segments[1]: 'La casa <b id="2">rossa</b> ha <a id="0">un collegamento</a>.',
        doc.segments[3]: '<i id="1">la riga</i> seconda',
    }
    out = docx.Document(io.BytesIO(translate(doc, lambda s: fixed.get(s, s))))
    p, p2 = out.paragraphs[1:3]
    assert [(r.text, bool(r.bold)) for r in p.runs] == [
        ("La casa ", False),
        ("rossa", True),
        (" ha ", False),
        (".", False),
    ]
    assert [(h.url, h.text) for h in p.hyperlinks] == [("https://example.com/x", "un collegamento")]
    assert p2.text == "First line\nla riga seconda"
    assert [r.text for r in p2.runs if r.italic] == ["la riga"]


def test_split_runs_of_one_formatting_are_one_stretch_of_text() -> None:
    d = docx.Document()
    p = d.add_paragraph()
    for piece in ("The cat ", "is sle", "eping"):  # Word cuts runs where it likes
        p.add_run(piece)
    buf = io.BytesIO()
    d.save(buf)
    assert read_document(buf.getvalue(), "a.docx").segments == ["The cat is sleeping"]


# ---------------------------------------------------------------- .odt
def test_odt_keeps_spans_links_breaks_and_the_zip_layout() -> None:
    data = make_odt(ODT_BODY)
    doc = read_document(data, "report.odt")
    assert doc.segments == [
        "The annual report",
        'The <b id="0">red</b> house has <a id="1">a link</a>.',
        "First line",
        'the <i id="0">second</i> line',
        "Header words",
    ]
    out = translate(doc)
    with zipfile.ZipFile(io.BytesIO(out)) as z, zipfile.ZipFile(io.BytesIO(data)) as src:
        infos = z.infolist()
        assert infos[0].filename == "mimetype" and infos[0].compress_type == zipfile.ZIP_STORED
        assert [i.filename for i in infos] == [i.filename for i in src.infolist()]
        assert z.read("Pictures/dot.png") == src.read("Pictures/dot.png")
        assert z.read("META-INF/manifest.xml") == src.read("META-INF/manifest.xml")
    h, p, p2 = odt_paragraphs(out)
    assert "".join(h.itertext()) == "THE ANNUAL REPORT" and h.get(f"{{{TEXT_NS}}}outline-level")
    (span,) = p.findall(f"{{{TEXT_NS}}}span")
    assert (span.get(f"{{{TEXT_NS}}}style-name"), span.text) == ("T1", "RED")
    (link,) = p.findall(f"{{{TEXT_NS}}}a")
    assert (link.get("{http://www.w3.org/1999/xlink}href"), link.text) == (
        "https://example.com/x",
        "A LINK",
    )
    assert "".join(p.itertext()) == "THE RED HOUSE HAS A LINK."
    assert [c.tag.split("}")[1] for c in p2] == ["line-break", "span", "tab"]
    assert "".join(p2.itertext()) == "FIRST LINETHE SECOND LINE42"
    assert ["".join(x.itertext()) for x in odt_paragraphs(out, "styles.xml")] == ["HEADER WORDS"]


# ---------------------------------------------------------------- errors
def one_line_error(data: bytes, name: str, *needles: str) -> None:
    with pytest.raises(DocumentError) as info:
        read_document(data, name)
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message
    for needle in needles:
        assert needle in message, (needle, message)


def test_bad_documents_are_one_line_errors() -> None:
    one_line_error(b"%PDF-1.4", "paper.pdf", "'.pdf'", *FORMATS)
    one_line_error(b"hello", "README", "no suffix")
    for name in ("a.docx", "a.odt"):
        one_line_error(b"\x00\x01 random bytes " * 10, name, f"not a valid {name[1:]} file")
    empty_zip = io.BytesIO()
    with zipfile.ZipFile(empty_zip, "w") as z:
        z.writestr("hello.txt", "hi")
    one_line_error(empty_zip.getvalue(), "a.docx", "not a valid .docx file: it has no")
    one_line_error(empty_zip.getvalue(), "a.odt", "no content.xml")
    one_line_error(make_odt("<text:p>unclosed"), "a.odt", "not a valid .odt file")
    one_line_error(make_docx(), "a.odt", "no content.xml")  # a .docx renamed
    sheet = io.BytesIO()
    with zipfile.ZipFile(sheet, "w") as z:
        z.writestr("mimetype", "application/vnd.oasis.opendocument.spreadsheet")
        z.writestr("content.xml", "<x/>")
    one_line_error(sheet.getvalue(), "a.odt", "its mimetype is", "spreadsheet")
    one_line_error(b"the cat\ncaf\xe9 here\n", "a.txt", "UTF-8", "0xe9", "line 2", "column 4")
    one_line_error(b"1\n00:00:01,000 --> 00:00:02,000\n\xff\n", "a.srt", "UTF-8")
    one_line_error(b"just some words", "a.srt", "no cue")
    one_line_error(b'<meta charset="klingon"><p>Hi', "a.html", "unknown charset")
    with pytest.raises(DocumentError, match="3 paragraphs to translate; at most 2"):
        read_document(b"one\ntwo\nthree\n", "a.txt", max_segments=2)
    with pytest.raises(ValueError, match="1 translations for 2 segments"):
        read_document(b"one\ntwo\n", "a.txt").write(["uno"])


def test_broken_and_bomb_zips_and_form_feeds_are_handled(monkeypatch: pytest.MonkeyPatch) -> None:
    # a zip whose end record is there but whose central directory is broken
    broken = bytearray(make_docx())
    at = broken.find(b"PK\x01\x02")
    broken[at : at + 4] = b"XXXX"
    for name in ("a.docx", "a.odt"):
        one_line_error(bytes(broken), name, f"not a valid {name[1:]} file")
    # a small zip that unpacks to more than the readers may hold in memory (the cap made
    # 1 MiB here, so that the test need not build a 256 MiB string)
    cap = 1024 * 1024
    monkeypatch.setattr(documents_base, "MAX_UNPACKED", cap)
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", "<x/>")
        z.writestr("content.xml", " " * (cap + 1))
        z.writestr("word/document.xml", "<x/>")
    assert len(bomb.getvalue()) < cap // 500
    for name in ("a.docx", "a.odt"):
        one_line_error(bomb.getvalue(), name, "unpacks to", str(cap))
    # a form feed in a page is read as space, and the page can be written back
    doc = read_document(b"<p>\x0cHello world</p>", "a.html")
    assert doc.write([s.upper() for s in doc.segments]) == b"<p> HELLO WORLD</p>"


def test_a_document_with_nothing_to_translate_comes_back_as_it_was() -> None:
    data = make_odt("<text:p>42</text:p>", header="")
    doc = read_document(data, "n.odt")
    assert doc.segments == [] and doc.write([]) == data


# ---------------------------------------------------------------- the CLI
@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("docs") / "tiny"
    tiny_translator().save_pretrained(path)
    return path


def run(args: list[str]) -> Result:
    return CliRunner().invoke(app, ["translate", *args])


def test_the_cli_translates_a_document_into_the_same_format(model: Path, tmp_path: Path) -> None:
    src = tmp_path / "in.docx"
    src.write_bytes(make_docx())
    out = tmp_path / "out.docx"
    res = run(["--model", str(model), "--beam", "1", "-i", str(src), "-o", str(out)])
    assert res.exit_code == 0, res.output
    d = docx.Document(str(out))
    assert [(h.url) for h in d.paragraphs[1].hyperlinks] == ["https://example.com/x"]
    assert d.tables[0].cell(0, 1).text == "42"
    assert not list(tmp_path.glob(".out.docx*"))  # written atomically, no temporary left


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-i", "{tmp}/in.docx"], "needs --output"),
        (["-i", "{tmp}/missing.docx", "-o", "{tmp}/out.docx"], "does not exist"),
        (["-i", "{tmp}/in.docx", "-o", "{tmp}/in.docx"], "is the input file"),
        (["-i", "{tmp}/in.docx", "-o", "{tmp}/out.odt"], "must have the same suffix"),
        (["-i", "{tmp}/in.txt", "-o", "{tmp}/out.docx"], "must have the same suffix"),
        (["-o", "{tmp}/out.docx", "the cat"], "give the document to translate as --input"),
        (["-i", "{tmp}/paper.pdf", "-o", "{tmp}/out.pdf"], "supported documents are"),
        (["-i", "{tmp}/bad.docx", "-o", "{tmp}/out.docx"], "not a valid .docx file"),
        (["-i", "{tmp}/in.docx", "-o", "{tmp}/nope/out.docx"], "does not exist"),
    ],
)
def test_the_cli_refuses_document_mistakes_in_one_line(
    model: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "in.docx").write_bytes(make_docx())
    (tmp_path / "in.txt").write_text("the cat\n")
    (tmp_path / "paper.pdf").write_bytes(b"%PDF-1.4\n\xff\xfe binary")
    (tmp_path / "bad.docx").write_bytes(b"not a zip")
    res = run(["--model", str(model), *(a.format(tmp=tmp_path) for a in args)])
    assert res.exit_code == 2, res.output
    errors = [line for line in res.output.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("error: ") and message in errors[0], errors
    assert not (tmp_path / "out.docx").exists()


# ---------------------------------------------------------------- the shipped model
shipped = pytest.mark.skipif(
    not (PRETRAINED_DIR / "model.safetensors").is_file(), reason="no shipped model in this checkout"
)


@pytest.fixture(scope="module")
def italian() -> Callable[[Document], bytes]:
    """Translate a document with the shipped model, checking each segment came back in
    Italian and with as many tags as it had."""
    import py3langid

    from attenzione.translator.translator import Translator

    tr = Translator.from_pretrained()

    def run(doc: Document) -> bytes:
        results = [r.text for r in tr.translate(doc.segments)]
        for src, out in zip(doc.segments, results, strict=True):
            assert out != src
            assert sorted(_TAG.findall(out)) == sorted(_TAG.findall(src)), (src, out)
            plain = _TAG.sub("", out)
            if len(plain.split()) >= 4:
                assert py3langid.classify(plain)[0] == "it", out
        return doc.write(results)

    return run


SHIPPED = ("The ", "old", " house has ", "a big garden")


@shipped
def test_the_shipped_model_translates_a_docx_with_its_bold_and_link(
    italian: Callable[[Document], bytes],
) -> None:
    d = docx.Document()
    p = d.add_paragraph(SHIPPED[0])
    p.add_run(SHIPPED[1]).bold = True
    p.add_run(SHIPPED[2])
    add_link(p, "https://example.com/x", SHIPPED[3])
    p.add_run(".")
    buf = io.BytesIO()
    d.save(buf)
    out = docx.Document(io.BytesIO(italian(read_document(buf.getvalue(), "a.docx"))))
    (p,) = out.paragraphs
    assert p.text != "".join(SHIPPED) + "."
    (bold,) = [r.text for r in p.runs if r.bold]
    assert bold.strip() and bold not in "".join(SHIPPED)
    (link,) = p.hyperlinks
    assert link.url == "https://example.com/x" and link.text.strip()


@shipped
def test_the_shipped_model_translates_an_odt_with_its_bold_and_link(
    italian: Callable[[Document], bytes],
) -> None:
    body = (
        '<text:p>The <text:span text:style-name="T1">old</text:span> house has '
        '<text:a xlink:href="https://example.com/x">a big garden</text:a>.</text:p>'
    )
    out = italian(read_document(make_odt(body, header="Good morning!"), "a.odt"))
    (p,) = odt_paragraphs(out)
    (span,) = p.findall(f"{{{TEXT_NS}}}span")
    assert span.get(f"{{{TEXT_NS}}}style-name") == "T1" and (span.text or "").strip()
    (link,) = p.findall(f"{{{TEXT_NS}}}a")
    assert link.get("{http://www.w3.org/1999/xlink}href") == "https://example.com/x"
    assert (link.text or "").strip()
    assert odt_paragraphs(out, "styles.xml")[0].text != "Good morning!"


@shipped
def test_the_shipped_model_translates_html_srt_and_txt(
    italian: Callable[[Document], bytes],
) -> None:
    page = b'<p>Click <b>Save</b> to keep <a href="/f">the file</a>.</p>'
    root = lxml.html.fragment_fromstring(italian(read_document(page, "a.html")))
    assert root.findtext("b").strip() and root.find("a").get("href") == "/f"
    srt = "1\n00:00:01,000 --> 00:00:02,000\nWhere is the train station?\n"
    lines = italian(read_document(srt.encode(), "a.srt")).decode().split("\n")
    assert lines[:2] == srt.split("\n")[:2] and lines[2] != srt.split("\n")[2]
    txt = italian(read_document(b"  I am very hungry today.\n\n", "a.txt")).decode()
    assert txt.startswith("  ") and txt.endswith(".\n\n")
