"""Everything the ``longdoc`` command writes to stdout and stderr goes through ``safe_text``.

Model output, reasoning, cached answers, server messages, model names, titles and file
names are untrusted: raw, an OSC 52 sequence writes the clipboard, OSC 8 fakes a link,
CSI clears the screen. The streams are wrapped once, at start-up, so no print can forget;
Longdoc's own styling (dimmed reasoning, the progress line) goes through ``style``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from desktop.errors import safe_text


class SafeStream:
    """A text stream whose ``write`` shows control characters escaped (see ``safe_text``)."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        """Write ``text`` with C0/C1 controls (but newline and tab) shown as ``\\x1b``."""
        self.inner.write(safe_text(text))
        return len(text)

    def flush(self) -> None:
        """Flush the wrapped stream (defined here: ``ask`` flushes every streamed piece)."""
        self.inner.flush()

    def style(self, sequence: str) -> None:
        """Longdoc's own control sequence (dim, reset, clear line), written as it is."""
        self.inner.write(sequence)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # flush, isatty, fileno, encoding, buffer...


def style(stream: TextIO | SafeStream, sequence: str) -> None:
    """Write one of Longdoc's own control sequences to ``stream``."""
    if isinstance(stream, SafeStream):
        stream.style(sequence)
    else:
        stream.write(sequence)


@contextmanager
def safe_streams() -> Iterator[None]:
    """stdout and stderr wrapped while the command runs (restored after, for tests)."""
    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, SafeStream):
        sys.stdout = SafeStream(sys.stdout)
    if not isinstance(sys.stderr, SafeStream):
        sys.stderr = SafeStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
