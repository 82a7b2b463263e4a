"""The one way tests run the real ``longdoc`` program: this checkout's code (``python -m``,
not whatever console script is installed), in a data directory of the test's own, with no
server settings leaking in from the environment."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Protocol

ROOT = Path(__file__).resolve().parents[2]
LONGDOC = (sys.executable, "-m", "desktop.cli.main")


class Server(Protocol):
    """What the runner needs of a server to point ``--endpoint`` at (the test server)."""

    @property
    def url(self) -> str:
        """The server's base URL."""
        ...


def environment(home: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a ``longdoc`` process: this tree's code, this data directory, and
    no ``LONGDOC_*`` server variable unless ``env`` gives it."""
    from desktop.config import SETTINGS

    result = {**os.environ, "LONGDOC_HOME": str(home), "PYTHONPATH": str(ROOT)}
    for var in (spec.env for spec in SETTINGS.values() if spec.env):
        result.pop(var, None)
    return {**result, **(env or {})}


def longdoc(
    *args: str,
    home: Path,
    server: Server | None = None,
    api_key: str = "",
    timeout: float = 300,
    env: dict[str, str] | None = None,
    cwd: Path | None = ROOT,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``longdoc ARGS...``; with ``server``, ``--endpoint`` (and ``--api-key``) name it.

    ``timeout`` only bounds a hang: it is never what a test asserts.
    """
    extra = ["--endpoint", server.url] if server is not None else []
    if server is not None and api_key:
        extra += ["--api-key", api_key]
    return subprocess.run(
        [*LONGDOC, *args, *extra],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environment(home, env),
        cwd=cwd,
        input=input,
        check=False,
    )


def review_grid(
    folder: Path, questions: str, *, home: Path, server: Server, api_key: str
) -> list[list[str]]:
    """The CSV grid ``longdoc review FOLDER`` writes for ``questions`` (a questions file's
    text), as rows; the files go beside ``folder`` and the command must succeed."""
    questions_file = folder.parent / "questions.txt"
    questions_file.write_text(questions)
    out = folder.parent / "grid.csv"
    done = longdoc(
        "review", str(folder), "--questions", str(questions_file), "--out", str(out),
        home=home, server=server, api_key=api_key,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return list(csv.reader(io.StringIO(out.read_text())))


def json_output(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The JSON object a command that succeeded printed (``--json``)."""
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def one_error(result: subprocess.CompletedProcess[str]) -> str:
    """The one ``Error:`` line a failed command printed (and no traceback)."""
    assert "Traceback" not in result.stderr, result.stderr
    [line] = [ln for ln in result.stderr.splitlines() if ln.startswith("Error: ")]
    return line
