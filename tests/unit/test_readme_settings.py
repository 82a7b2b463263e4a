"""The README's words for settings whose empty value means something: as the app says it."""

from __future__ import annotations

import re
from pathlib import Path

from desktop.config import SETTINGS

README = Path(__file__).resolve().parents[2] / "README.md"


def test_a_zero_context_length_reads_as_the_server_reports() -> None:
    line = next(
        line for line in README.read_text().splitlines() if re.match(r"context_length = 0\b", line)
    )
    # The Settings dialog's special value and the flag's help say the same words.
    assert f"0: {SETTINGS['context_length'].empty}" in line
    assert SETTINGS["context_length"].empty == "as the server reports"
