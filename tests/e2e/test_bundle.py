"""The offline bundle: built from the checkout, installed with pip's network off, and run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CORPUS_DIR

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.build]


def _require(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        if os.environ.get("LONGDOC_REQUIRE_CONTAINERS"):
            pytest.fail(f"{tool} is not installed but `make test` installs it")
        pytest.skip(f"{tool} is not installed")
    return path


def test_desktop_entry_and_metainfo_validate() -> None:
    desktop = subprocess.run(
        [_require("desktop-file-validate"), str(ROOT / "resources" / "longdoc.desktop")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert desktop.returncode == 0 and not desktop.stdout.strip(), desktop.stdout
    metainfo = ROOT / "resources" / "io.github.longdoc.Longdoc.metainfo.xml"
    appstream = subprocess.run(
        [_require("appstreamcli"), "validate", "--no-net", str(metainfo)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert appstream.returncode == 0, appstream.stdout + appstream.stderr
    for size in ("48x48", "256x256", "scalable"):
        icons = list((ROOT / "resources" / "icons" / "hicolor" / size / "apps").glob("longdoc.*"))
        assert icons, size


def test_bundle_installs_offline_and_runs(tmp_path: Path) -> None:
    bundle = tmp_path / "longdoc-bundle"
    built = subprocess.run(
        ["bash", str(ROOT / "packaging" / "build-bundle.sh"), "--out", str(bundle), "--no-tar"],
        cwd=ROOT, capture_output=True, text=True, timeout=1200, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    wheels = [p.name for p in (bundle / "wheelhouse").iterdir()]
    assert any(name.startswith("longdoc-") for name in wheels)
    assert any(name.startswith("pyside6_essentials-") for name in wheels)
    home = tmp_path / "user"
    home.mkdir()
    # Any network use would go to a dead proxy and fail: the install must not need it.
    dead = "http://127.0.0.1:9"
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "http_proxy": dead,
        "https_proxy": dead,
        "HTTP_PROXY": dead,
        "HTTPS_PROXY": dead,
        "LONGDOC_HOME": str(tmp_path / "data"),
    }
    base_python = getattr(sys, "_base_executable", sys.executable)
    installed = subprocess.run(
        [str(bundle / "install.sh"), "--python", base_python],
        capture_output=True, text=True, env=env, timeout=1200, check=False,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-3000:]
    longdoc = home / ".local" / "bin" / "longdoc"
    assert (home / ".local" / "share" / "applications" / "longdoc.desktop").is_file()
    assert list((home / ".local" / "share" / "icons" / "hicolor").glob("*/apps/longdoc.*"))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(longdoc), *args], capture_output=True, text=True, env=env, timeout=300,
            cwd=tmp_path, check=False,
        )  # fmt: skip

    assert run("--version").stdout.startswith("longdoc ")
    pdf = CORPUS_DIR / "004-pdflatex-4-pages" / "pdflatex-4-pages.pdf"
    ingested = run("ingest", "--json", str(pdf))
    assert ingested.returncode == 0, ingested.stderr
    assert json.loads(ingested.stdout.splitlines()[0])["pages"] == 4
    doctor = run("doctor", "--json")
    assert doctor.returncode in (0, 7), doctor.stderr
    names = {c["name"] for c in json.loads(doctor.stdout)["checks"]}
    assert {"Python", "Qt", "Data directory"} <= names
    # The installed program runs from the bundle's environment, not from this checkout.
    assert str(ROOT) not in run("doctor", "--json").stdout.split('"Python"')[1].split("}")[0]
