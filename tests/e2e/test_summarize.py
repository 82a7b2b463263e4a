"""``longdoc summarize``: a folder batch with a report, resumed from the cache."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import API_KEY, CORPUS_DIR
from tests.e2e.test_cli import chats, longdoc
from tests.support.sglang_server import FakeSGLang


def test_summarize_folder_resumes_and_reports(
    sglang: FakeSGLang, home: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "contracts"
    folder.mkdir()
    for name in (
        "004-pdflatex-4-pages/pdflatex-4-pages.pdf",
        "006-pdflatex-outline/pdflatex-outline.pdf",
        "005-libreoffice-writer-password/libreoffice-writer-password.pdf",
    ):
        shutil.copy(CORPUS_DIR / name, folder)
    (folder / "notes.md").write_text("# Notes\n\nThe fee is 300 EUR per day.\n")
    out = tmp_path / "report.md"
    args = ["summarize", str(folder), "--endpoint", sglang.url, "--api-key", API_KEY]
    first = longdoc(*args, "--out", str(out), home=home)
    assert first.returncode == 6  # the encrypted one is skipped, the rest summarized
    report = out.read_text()
    assert report.count("\n## ") == 4  # three summaries + "Not summarized"
    assert "libreoffice-writer-password.pdf`: the PDF is encrypted" in report
    assert "[4/4]" in first.stderr
    asked = chats(sglang)
    assert asked == 3
    # Running again resumes from the cache: nothing is asked twice.
    again = longdoc(*args, "--out", str(tmp_path / "report.json"), home=home)
    data = json.loads((tmp_path / "report.json").read_text())
    assert [i["status"] for i in data["items"]].count("cached") == 3
    assert chats(sglang) == asked
    assert again.returncode == 6
