"""Only desktop/ui may import Qt: every other module imports with PySide6 blocked."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import desktop
import server_manager

ROOT = Path(__file__).resolve().parents[2]


def core_modules() -> list[str]:
    names = []
    for package in (desktop, server_manager):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not info.name.startswith("desktop.ui"):
                names.append(info.name)
    return names


def test_core_imports_without_qt() -> None:
    modules = core_modules()
    assert "desktop.answering.service" in modules
    assert "server_manager" not in modules  # packages list their children
    code = (
        "import sys\n"
        "sys.modules['PySide6'] = None  # any Qt import now fails\n"
        f"for name in {modules!r}:\n"
        "    __import__(name)\n"
        "assert not any(m.startswith('PySide6') for m in sys.modules if sys.modules[m])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr


def test_cli_help_does_not_load_qt() -> None:
    code = (
        "import sys\n"
        "from desktop.cli.main import build_parser\n"
        "build_parser()\n"
        "print(any(m.startswith('PySide6') for m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip() == "False", result.stderr
