"""Word content outside plain runs: imported parts, form fields, symbols, headers, list
overrides, damaged parts."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from desktop.cli.main import main
from desktop.documents import extract
from desktop.errors import DocumentUnreadable

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
W14 = "http://schemas.microsoft.com/office/word/2010/wordml"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def docx(
    path: Path,
    body: str,
    parts: dict[str, tuple[str, str | bytes]] | None = None,
    numbering: str = "",
    types: str = "",
) -> Path:
    """A .docx around ``body``; ``parts``: rId -> (relationship type, name under word/)."""
    parts = dict(parts or {})
    rels = "".join(
        f'<Relationship Id="{rid}" Type="{REL}/{kind}" Target="{name}"/>'
        for rid, (kind, (name, _)) in ((rid, (k, v)) for rid, (k, v) in _split(parts).items())
    )
    if numbering:
        rels += f'<Relationship Id="rNum" Type="{REL}/numbering" Target="numbering.xml"/>'
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(
            "[Content_Types].xml",
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            f"{types}</Types>",
        )
        z.writestr(
            "_rels/.rels",
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            f'<Relationship Id="rId1" Type="{REL}/officeDocument" Target="word/document.xml"/>'
            "</Relationships>",
        )
        z.writestr(
            "word/_rels/document.xml.rels",
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            f"{rels}</Relationships>",
        )
        z.writestr(
            "word/document.xml",
            f'<w:document xmlns:w="{W}" xmlns:w14="{W14}" xmlns:r="{R}"><w:body>{body}'
            "</w:body></w:document>",
        )
        for _kind, (name, data) in _split(parts).values():
            z.writestr(f"word/{name}", data)
        if numbering:
            z.writestr(
                "word/numbering.xml", f'<w:numbering xmlns:w="{W}">{numbering}</w:numbering>'
            )
    return path


def _split(
    parts: dict[str, tuple[str, str | bytes]],
) -> dict[str, tuple[str, tuple[str, str | bytes]]]:
    """rId -> (type, (name, data)) from rId -> (type, data) with the name in the type."""
    out = {}
    for rid, (kind_name, data) in parts.items():
        kind, name = kind_name.split(":", 1)
        out[rid] = (kind, (name, data))
    return out


def p(inner: str) -> str:
    return f"<w:p>{inner}</w:p>"


def t(text: str) -> str:
    return f'<w:r><w:t xml:space="preserve">{text}</w:t></w:r>'


def texts(doc_path: Path) -> list[str]:
    doc = extract(doc_path)
    return [line.split("] ", 1)[-1] for page in doc.pages for line in page.text.splitlines()]


def test_alt_chunk_html_and_text_are_read_in_place(tmp_path: Path) -> None:
    html = (
        "<html><head><style>p {color: red}</style><script>alert(1)</script></head><body>"
        "<h2>Imported terms</h2><p>The rent is &euro;1,200 &amp; due monthly.</p>"
        "<table><tr><td>Tenant</td><td>Ana</td></tr></table></body></html>"
    )
    body = (
        p(t("Before the chunk."))
        + '<w:altChunk r:id="rA"/>'
        + p(t("Between."))
        + '<w:altChunk r:id="rB"/>'
        + p(t("After."))
    )
    path = docx(
        tmp_path / "chunks.docx",
        body,
        {
            "rA": ("aFChunk:chunk1.html", html),
            "rB": ("aFChunk:chunk2.txt", "Plain line one\nline two"),
        },
        types='<Default Extension="html" ContentType="text/html"/>',
    )
    lines = texts(path)
    assert lines == [
        "Before the chunk.",
        "### Imported terms",
        "The rent is €1,200 & due monthly.",
        "| Tenant | Ana |",
        "Between.",
        "Plain line one",
        "line two",
        "After.",
    ]


def test_alt_chunk_mht_and_other_formats(tmp_path: Path) -> None:
    mht = (
        'MIME-Version: 1.0\r\nContent-Type: multipart/related; boundary="b"\r\n\r\n--b\r\n'
        'Content-Type: text/html; charset="utf-8"\r\nContent-Transfer-Encoding: quoted-printable'
        "\r\n\r\n<p>Clause =C3=A9 one</p>\r\n--b--\r\n"
    )
    body = '<w:altChunk r:id="rA"/><w:altChunk r:id="rB"/>'
    path = docx(
        tmp_path / "mht.docx",
        body,
        {"rA": ("aFChunk:a.mht", mht), "rB": ("aFChunk:b.rtf", r"{\rtf1 hidden}")},
    )
    doc = extract(path)
    assert "Clause é one" in doc.pages[0].text
    assert "hidden" not in doc.pages[0].text
    assert any("RTF format" in w and "b.rtf" in w for w in doc.warnings)


def test_a_document_that_is_only_an_alt_chunk_is_not_empty(tmp_path: Path) -> None:
    path = docx(
        tmp_path / "only.docx",
        '<w:altChunk r:id="rA"/>',
        {"rA": ("aFChunk:x.htm", "<p>All here</p>")},
    )
    assert texts(path) == ["All here"]


def test_html_entities_are_never_expanded_from_a_dtd(tmp_path: Path) -> None:
    html = '<!DOCTYPE x [<!ENTITY boom "BOOM">]><p>a &boom; b</p>'
    path = docx(tmp_path / "dtd.docx", '<w:altChunk r:id="rA"/>', {"rA": ("aFChunk:x.htm", html)})
    assert "BOOM" not in " ".join(texts(path))


def test_legacy_form_fields_show_their_state(tmp_path: Path) -> None:
    def field(data: str, result: str = "") -> str:
        return (
            f'<w:r><w:fldChar w:fldCharType="begin"><w:ffData>{data}</w:ffData></w:fldChar></w:r>'
            "<w:r><w:instrText> FORMX </w:instrText></w:r>"
            '<w:r><w:fldChar w:fldCharType="separate"/></w:r>'
            f"{t(result) if result else ''}"
            '<w:r><w:fldChar w:fldCharType="end"/></w:r>'
        )

    body = (
        p(field('<w:checkBox><w:default w:val="0"/><w:checked/></w:checkBox>') + t("I accept"))
        + p(
            field('<w:checkBox><w:default w:val="1"/><w:checked w:val="0"/></w:checkBox>')
            + t("I decline")
        )
        + p(field('<w:checkBox><w:default w:val="1"/></w:checkBox>') + t("By default"))
        + p(
            t("Country: ")
            + field(
                '<w:ddList><w:result w:val="1"/><w:listEntry w:val="France"/>'
                '<w:listEntry w:val="Spain"/></w:ddList>'
            )
        )
        + p(t("Name: ") + field("<w:textInput/>", "Lucía Garzas"))
    )
    assert texts(docx(tmp_path / "legacy.docx", body)) == [
        "☒ I accept",
        "☐ I decline",
        "☒ By default",
        "Country: Spain",
        "Name: Lucía Garzas",
    ]


def test_content_control_check_boxes_and_drop_downs(tmp_path: Path) -> None:
    def box(checked: str, glyph: str) -> str:
        return (
            f'<w:sdt><w:sdtPr><w14:checkbox><w14:checked w14:val="{checked}"/></w14:checkbox>'
            f"</w:sdtPr><w:sdtContent>{t(glyph)}</w:sdtContent></w:sdt>"
        )

    drop = (
        '<w:sdt><w:sdtPr><w:dropDownList><w:listItem w:displayText="Spain" w:value="ES"/>'
        "</w:dropDownList></w:sdtPr><w:sdtContent>" + t("Spain") + "</w:sdtContent></w:sdt>"
    )
    body = p(box("1", "☐") + t(" Paid")) + p(box("0", "x") + t(" Late")) + p(t("Country: ") + drop)
    assert texts(docx(tmp_path / "sdt.docx", body)) == ["☒ Paid", "☐ Late", "Country: Spain"]


def test_sym_gives_its_character(tmp_path: Path) -> None:
    def sym(font: str, char: str) -> str:
        return f'<w:r><w:sym w:font="{font}" w:char="{char}"/></w:r>'

    body = p(
        sym("Wingdings", "F0FC")
        + t(" done ")
        + sym("Symbol", "F061")
        + t(" = 2")
        + sym("Symbol", "F0B3")
        + t("1")
    )
    assert texts(docx(tmp_path / "sym.docx", body)) == ["✓ done α = 2≥1"]


def test_headers_and_footers_are_read_only_when_the_body_is_empty(tmp_path: Path) -> None:
    header = f'<w:hdr xmlns:w="{W}">{p(t("ACME Ltd, letterhead"))}</w:hdr>'
    footer = f'<w:ftr xmlns:w="{W}">{p(t("Page footer"))}</w:ftr>'
    parts = {
        "rH": ("header:header1.xml", header),
        "rF": ("footer:footer1.xml", footer),
        "rF2": ("footer:footer2.xml", footer),
    }
    assert texts(docx(tmp_path / "only.docx", p(""), parts)) == [
        "ACME Ltd, letterhead",
        "Page footer",
    ]
    assert texts(docx(tmp_path / "body.docx", p(t("Body text")), parts)) == ["Body text"]


def test_numbering_overrides_give_words_labels(tmp_path: Path) -> None:
    numbering = (
        '<w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:start w:val="1"/>'
        '<w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl></w:abstractNum>'
        '<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>'
        '<w:num w:numId="2"><w:abstractNumId w:val="0"/><w:lvlOverride w:ilvl="0">'
        '<w:startOverride w:val="2"/><w:lvl w:ilvl="0"><w:start w:val="1"/>'
        '<w:numFmt w:val="upperLetter"/><w:lvlText w:val="%1."/></w:lvl></w:lvlOverride></w:num>'
        '<w:num w:numId="3"><w:abstractNumId w:val="0"/><w:lvlOverride w:ilvl="0">'
        '<w:startOverride w:val="7"/></w:lvlOverride></w:num>'
    )

    def item(num: str, text: str) -> str:
        return (
            f'<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="{num}"/></w:numPr></w:pPr>'
            f"{t(text)}</w:p>"
        )

    body = (
        item("1", "one")
        + item("1", "two")
        + item("2", "bee")
        + item("2", "cee")
        + item("3", "seven")
    )
    assert texts(docx(tmp_path / "num.docx", body, numbering=numbering)) == [
        "1. one",
        "2. two",
        "B. bee",
        "C. cee",
        "7. seven",
    ]


def _corrupt_part(path: Path) -> Path:
    """``path`` with the compressed bytes of word/document.xml damaged (CRC and inflate)."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("word/document.xml")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for i in range(start + 2, start + min(info.compress_size, 40)):
        data[i] ^= 0xA5
    path.write_bytes(bytes(data))
    return path


def test_a_damaged_compressed_part_is_one_error(tmp_path: Path) -> None:
    body = p(t("Some text that compresses well. " * 40))
    path = _corrupt_part(docx(tmp_path / "bad.docx", body))
    with pytest.raises(DocumentUnreadable, match="the Word document is damaged") as info:
        extract(path)
    assert "\n" not in str(info.value)


def test_a_damaged_docx_does_not_stop_a_multi_file_ingest(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _corrupt_part(docx(tmp_path / "a-bad.docx", p(t("Some text. " * 80))))
    good = docx(tmp_path / "b-good.docx", p(t("Good text")))
    code = main(["ingest", str(bad), str(good), "--json"])
    out, err = capsys.readouterr()
    assert code == 3
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert [("error" in r) for r in rows] == [True, False]
    assert "Traceback" not in err
