"""Word documents: headings, lists and tables in reading order with § / ¶ anchors as labels."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from desktop.documents import extract, tokens
from desktop.documents.anchors import AnchorIndex
from desktop.documents.docx import PAGE_CHARS, page_for_anchor
from desktop.documents.ingest import EXTRACTOR_VERSION
from desktop.documents.layout import document_block
from desktop.documents.model import Page
from desktop.errors import DocumentEmpty, DocumentEncrypted, DocumentUnreadable
from tests.support.documents import contract_docx

W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
MC_NS = "http://schemas.openxmlformats.org/markup-compatibility/2006"


def raw_docx(
    path: Path,
    body: str,
    styles: str = "",
    numbering: str = "",
    content_types: bool = True,
    footnotes: str = "",
) -> Path:
    """A minimal .docx package around ``body`` (the XML inside w:body)."""
    rels = [
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
        'relationships/styles" Target="styles.xml"/>',
        '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
        'relationships/numbering" Target="numbering.xml"/>',
        '<Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
        'relationships/footnotes" Target="notes/fn.xml"/>',
    ]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        if content_types:
            z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr(
            "_rels/.rels",
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
            'relationships/officeDocument" Target="word/document.xml"/></Relationships>',
        )
        z.writestr(
            "word/_rels/document.xml.rels",
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            + "".join(rels)
            + "</Relationships>",
        )
        z.writestr(
            "word/document.xml",
            f'<w:document xmlns:w="{W_NS}" xmlns:mc="{MC_NS}"><w:body>{body}</w:body></w:document>',
        )
        if styles:
            z.writestr("word/styles.xml", f'<w:styles xmlns:w="{W_NS}">{styles}</w:styles>')
        if footnotes:
            z.writestr(
                "word/notes/fn.xml", f'<w:footnotes xmlns:w="{W_NS}">{footnotes}</w:footnotes>'
            )
        if numbering:
            z.writestr(
                "word/numbering.xml", f'<w:numbering xmlns:w="{W_NS}">{numbering}</w:numbering>'
            )
    return path


def para(text: str, style: str = "", extra: str = "") -> str:
    ppr = f'<w:pPr><w:pStyle w:val="{style}"/>{extra}</w:pPr>' if style or extra else ""
    return f'<w:p>{ppr}<w:r><w:t xml:space="preserve">{text}</w:t></w:r></w:p>'


def test_headings_lists_and_table_in_reading_order(tmp_path: Path) -> None:
    """python-docx's output reads as anchored blocks, one page per section."""
    doc = extract(contract_docx(tmp_path / "contract.docx"))
    assert doc.kind == "docx"
    assert doc.extractor == f"docx/{EXTRACTOR_VERSION}"
    assert doc.title == "Supply agreement"
    assert [p.label for p in doc.pages] == ["¶ 1", "§ 1", "§ 2", "§ 4.2", "§ 3"]
    assert doc.pages[0].text == "[¶ 1] Made between ACME and Example Ltd."
    assert doc.pages[1].text == (
        "[§ 1] ## Definitions\n"
        "[§ 1 ¶ 1] The Buyer means ACME Corp.\n"
        "[§ 1 ¶ 2] - Goods are widgets\n"
        "[§ 1 ¶ 3] - Services are repairs"
    )
    assert doc.pages[3].text == (
        "[§ 4.2] ### 4.2 Payment terms\n"
        "[§ 4.2 ¶ 1] Invoices are due within 30 days.\n"
        "[§ 4.2 ¶ 2] 1. Send the invoice\n"
        "[§ 4.2 ¶ 3] 2. Pay the invoice\n"
        "[§ 4.2 ¶ 4] Table:\n"
        "| Item | Price |\n"
        "| --- | --- |\n"
        "| Widget | 10 EUR |\n"
        "| Gadget \\| XL | 20 |\n"
        "[§ 4.2 ¶ 5] Late payments carry interest\n"
        "at 5% a year."
    )
    assert doc.pages[4].text == (
        "[§ 3] ## Termination\n[§ 3 ¶ 1] Either party may terminate with notice."
    )
    assert [(o.level, o.title, o.page) for o in doc.outline] == [
        (0, "Definitions", 2),
        (0, "Payment", 3),
        (1, "4.2 Payment terms", 4),
        (0, "Termination", 5),
    ]
    assert doc.metadata["Format"] == "Word (.docx)"
    assert doc.tokens == tokens.count(document_block(doc.title, doc.pages))


def test_anchors_resolve_to_their_page(tmp_path: Path) -> None:
    """What the model cites (``§ 4.2 ¶ 3``, spacing aside) resolves to the page holding it."""
    doc = extract(contract_docx(tmp_path / "contract.docx"))
    index = AnchorIndex(doc.pages, doc.kind)
    assert index.resolve("§ 4.2 ¶ 3") == 4
    assert index.resolve("[§4.2, ¶3]") == 4
    assert index.resolve("§ 4.2") == 4
    assert index.resolve("¶ 1") == 1
    assert index.resolve("§ 3 ¶ 1") == 5
    assert index.resolve("§ 9 ¶ 1") is None
    assert index.resolve("§ 4.2 ¶ 9") == 4  # past the last paragraph: still its section
    assert index.resolve("00:00:01") is None


def test_page_for_anchor_from_labels_alone() -> None:
    """Long sections continue on pages labelled by paragraph; a paragraph finds its page."""
    pages = [
        Page(1, "¶ 1", ""),
        Page(2, "¶ 8", ""),
        Page(3, "§ 1", ""),
        Page(4, "§ 1 ¶ 12", ""),
        Page(5, "§ 1.1", ""),
    ]
    assert page_for_anchor(pages, "¶ 3") == 1
    assert page_for_anchor(pages, "¶ 8") == 2
    assert page_for_anchor(pages, "§ 1") == 3
    assert page_for_anchor(pages, "§ 1 ¶ 11") == 3
    assert page_for_anchor(pages, "[§1, ¶12]") == 4
    assert page_for_anchor(pages, "§ 1.1 ¶ 40") == 5
    assert page_for_anchor(pages, "§ 2") is None
    assert page_for_anchor(pages, "p. 3") is None


def test_auto_numbered_headings_tracked_changes_controls_and_text_boxes(tmp_path: Path) -> None:
    """Word's own heading numbers, insertions (not deletions), content controls, text boxes."""
    styles = (
        '<w:style w:type="paragraph" w:styleId="H1"><w:name w:val="heading 1"/>'
        '<w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="7"/></w:numPr></w:pPr></w:style>'
        '<w:style w:type="paragraph" w:styleId="H2"><w:name w:val="heading 2"/>'
        '<w:basedOn w:val="H1"/>'
        '<w:pPr><w:numPr><w:ilvl w:val="1"/></w:numPr></w:pPr></w:style>'
    )
    numbering = (
        '<w:abstractNum w:abstractNumId="3">'
        '<w:lvl w:ilvl="0"><w:start w:val="4"/><w:numFmt w:val="decimal"/>'
        '<w:lvlText w:val="%1."/></w:lvl>'
        '<w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="decimal"/>'
        '<w:lvlText w:val="%1.%2"/></w:lvl>'
        '<w:lvl w:ilvl="2"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/>'
        '<w:lvlText w:val="(%3)"/></w:lvl></w:abstractNum>'
        '<w:num w:numId="7"><w:abstractNumId w:val="3"/></w:num>'
    )
    body = (
        para("Payment", "H1")
        + para("Terms", "H2")
        + para("Terms again", "H2")
        + "<w:p><w:r><w:t>Pay </w:t></w:r>"
        "<w:del><w:r><w:delText>never</w:delText></w:r></w:del>"
        '<w:ins><w:r><w:t xml:space="preserve">within 30 days</w:t></w:r></w:ins>'
        '<w:r><w:fldChar w:fldCharType="begin"/></w:r>'
        "<w:r><w:instrText> PAGE </w:instrText></w:r>"
        '<w:r><w:fldChar w:fldCharType="separate"/></w:r>'
        "<w:r><w:t>.</w:t></w:r></w:p>"
        + para("sub item", extra='<w:numPr><w:ilvl w:val="2"/><w:numId w:val="7"/></w:numPr>')
        + "<w:sdt><w:sdtPr/><w:sdtContent>"
        + para("Inside a content control.")
        + "</w:sdtContent></w:sdt>"
        + "<w:p><w:r><w:t>Has a box.</w:t></w:r><w:r><mc:AlternateContent><mc:Choice>"
        "<w:drawing><w:txbxContent>"
        + para("Boxed text.")
        + "</w:txbxContent></w:drawing></mc:Choice><mc:Fallback><w:pict><w:txbxContent>"
        + para("Boxed text.")
        + "</w:txbxContent></w:pict></mc:Fallback></mc:AlternateContent></w:r></w:p>"
    )
    doc = extract(raw_docx(tmp_path / "numbered.docx", body, styles, numbering))
    assert [p.label for p in doc.pages] == ["§ 4", "§ 4.1", "§ 4.2"]
    assert doc.pages[0].text == "[§ 4] ## 4 Payment"
    assert doc.pages[2].text == (
        "[§ 4.2] ### 4.2 Terms again\n"
        "[§ 4.2 ¶ 1] Pay within 30 days.\n"
        "[§ 4.2 ¶ 2]     (a) sub item\n"
        "[§ 4.2 ¶ 3] Inside a content control.\n"
        "[§ 4.2 ¶ 4] Has a box.\n"
        "[§ 4.2 ¶ 5] Boxed text."
    )
    assert doc.title == "4 Payment"


def test_headings_without_numbers_are_numbered_by_position(tmp_path: Path) -> None:
    """Unnumbered headings get their place in the heading tree; skipped levels nest once."""
    styles = "".join(
        f'<w:style w:type="paragraph" w:styleId="Heading{n}"><w:name w:val="heading {n}"/>'
        "</w:style>"
        for n in (1, 2, 3)
    )
    body = (
        para("Intro", "Heading1")
        + para("Deep", "Heading3")
        + para("text")
        + para("Next", "Heading2")
        + para("Second", "Heading1")
        + para("text")
    )
    doc = extract(raw_docx(tmp_path / "plain.docx", body, styles))
    assert [p.label for p in doc.pages] == ["§ 1", "§ 1.1", "§ 1.2", "§ 2"]
    assert doc.pages[1].text == "[§ 1.1] #### Deep\n[§ 1.1 ¶ 1] text"


def test_long_sections_continue_on_pages_named_by_paragraph(tmp_path: Path) -> None:
    """A section past ~4,000 characters continues on a page labelled by its first paragraph."""
    text = "word " * 200
    body = "".join(para(f"{i} {text}") for i in range(1, 11))
    doc = extract(raw_docx(tmp_path / "long.docx", body))
    assert all(len(p.text) <= PAGE_CHARS + 1100 for p in doc.pages)
    assert [p.label for p in doc.pages] == ["¶ 1", "¶ 4", "¶ 7", "¶ 10"]
    assert doc.pages[1].text.startswith("[¶ 4] 4 word")


def test_encrypted_docx_is_one_clear_error(tmp_path: Path) -> None:
    """A password-protected file (an OLE container with EncryptedPackage) is DocumentEncrypted."""
    stream_name = "EncryptedPackage".encode("utf-16-le")
    data = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 600 + stream_name
    path = tmp_path / "secret.docx"
    path.write_bytes(data)
    with pytest.raises(DocumentEncrypted) as info:
        extract(path)
    assert str(info.value) == (
        f"{path}: the Word document is password-protected; save a copy without a password "
        "and try again"
    )


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: p.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 600), "old Word"),
        (lambda p: p.write_bytes(b"hello, not a zip"), "not a zip archive"),
        (lambda p: p.write_bytes(b"PK\x03\x04truncated"), "damaged"),
        (
            lambda p: zipfile.ZipFile(p, "w").writestr("other.txt", "hi"),
            "this is not a Word document",
        ),
        (
            lambda p: raw_docx(p, "<w:p><w:r><w:t>unclosed</w:r></w:p>"),
            "damaged (word/document.xml: mismatched tag",
        ),
    ],
)
def test_broken_docx_is_unreadable(tmp_path: Path, make: object, reason: str) -> None:
    path = tmp_path / "broken.docx"
    make(path)  # type: ignore[operator]
    with pytest.raises(DocumentUnreadable) as info:
        extract(path)
    assert str(info.value).startswith(f"{path}: ")
    assert reason in str(info.value)


def test_dtd_is_refused(tmp_path: Path) -> None:
    """Entity expansion is never attempted: a part with a DTD is refused as damaged."""
    path = tmp_path / "lol.docx"
    raw_docx(path, para("x"))
    with zipfile.ZipFile(path, "a") as z:
        z.writestr("docProps/core.xml", '<!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;</x>')
    with pytest.raises(DocumentUnreadable, match="declares a DTD"):
        extract(path)


def test_empty_word_document(tmp_path: Path) -> None:
    path = raw_docx(tmp_path / "empty.docx", "<w:p/><w:p><w:r><w:t>  </w:t></w:r></w:p>")
    with pytest.raises(DocumentEmpty) as info:
        extract(path)
    assert str(info.value) == f"{path}: no text could be extracted: the Word document is empty"


def test_strict_open_xml_and_equations(tmp_path: Path) -> None:
    """Word's Strict Open XML namespace reads like the usual one; equation text is kept."""
    body = (
        para("Before") + '<w:p><w:r><w:t xml:space="preserve">Area: </w:t></w:r>'
        '<m:oMath xmlns:m="http://purl.oclc.org/ooxml/officeDocument/math">'
        "<m:r><m:t>A=πr²</m:t></m:r></m:oMath></w:p>"
    )
    path = raw_docx(tmp_path / "strict.docx", body)
    with zipfile.ZipFile(path) as z:
        parts = {name: z.read(name) for name in z.namelist()}
    strict = b"http://purl.oclc.org/ooxml/wordprocessingml/main"
    parts["word/document.xml"] = parts["word/document.xml"].replace(W_NS.encode(), strict)
    with zipfile.ZipFile(path, "w") as z:
        for name, data in parts.items():
            z.writestr(name, data)
    doc = extract(path)
    assert doc.pages[0].text == "[¶ 1] Before\n[¶ 2] Area: A=πr²"


def test_footnotes_close_the_document_behind_their_marks(tmp_path: Path) -> None:
    """A reference shows as [^n] in the text; the notes follow in a Notes section."""
    body = (
        '<w:p><w:r><w:t>The fee is fixed.</w:t></w:r><w:r><w:footnoteReference w:id="2"/>'
        "</w:r></w:p>"
    )
    footnotes = (
        '<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p>'
        "</w:footnote>"
        '<w:footnote w:id="2"><w:p><w:r><w:footnoteRef/></w:r>'
        '<w:r><w:t xml:space="preserve"> Until 2027, then indexed.</w:t></w:r></w:p></w:footnote>'
    )
    doc = extract(raw_docx(tmp_path / "fees.docx", body, footnotes=footnotes))
    assert [p.label for p in doc.pages] == ["¶ 1", "§ Notes"]
    assert doc.pages[0].text == "[¶ 1] The fee is fixed.[^2]"
    assert doc.pages[1].text == "[§ Notes] ## Notes\n[§ Notes ¶ 1] [^2] Until 2027, then indexed."
    assert AnchorIndex(doc.pages, doc.kind).resolve("§ Notes ¶ 1") == 2


def test_citations_resolve_paragraphs_through_the_label_index(tmp_path: Path) -> None:
    """The one citation grammar reads [§ 4.2 ¶ 3]; the index finds the page that holds it."""
    from desktop.answering.citations import find_citations, index_for

    doc = extract(contract_docx(tmp_path / "contract.docx"))
    index = index_for(doc)
    answer = "Pay within 30 days [§ 4.2 ¶ 3], or terminate [§3, ¶1]; see [§ 4.2]."
    assert [index.pages_for(ref) for ref in find_citations(answer)] == [(4,), (5,), (4,)]
