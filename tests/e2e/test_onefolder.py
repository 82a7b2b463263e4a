"""The one-folder build (PyInstaller) starts with no Python on PATH and ingests a PDF."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CORPUS_DIR

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.build]


def test_one_folder_build_runs_without_python(tmp_path: Path) -> None:
    out = tmp_path / "onefolder"
    built = subprocess.run(
        ["bash", str(ROOT / "packaging" / "build-onefolder.sh"), "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    program = out / "longdoc" / "longdoc"
    # No interpreter anywhere on PATH, nothing from the checkout's environment.
    env = {
        "PATH": str(tmp_path / "empty"),
        "HOME": str(tmp_path),
        "LONGDOC_HOME": str(tmp_path / "data"),
    }

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(program), *args], capture_output=True, text=True, env=env, cwd=tmp_path,
            timeout=300, check=False,
        )  # fmt: skip

    assert run("--version").stdout.startswith("longdoc ")
    pdf = CORPUS_DIR / "004-pdflatex-4-pages" / "pdflatex-4-pages.pdf"
    ingested = run("ingest", "--json", str(pdf))
    assert ingested.returncode == 0, ingested.stderr
    row = json.loads(ingested.stdout.splitlines()[0])
    assert row["pages"] == 4 and row["tokens"] > 0
    checks = {c["name"]: c for c in json.loads(run("doctor", "--json").stdout)["checks"]}
    assert checks["Qt"]["status"] == "ok", checks["Qt"]
    assert checks["Server profile"]["status"] == "ok"  # the bundled profiles are inside
