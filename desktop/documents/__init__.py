"""The Qt-free document layer: PDF, text and Markdown files into pages with token counts."""

from typing import Any

from desktop.documents.model import Document, OutlineEntry, Page

# Loaded on first use: the store imports the model, and reopening a stored document or
# searching the library never reads a file (ingest and its readers: ~10 ms to import).
_FROM_INGEST = ("SUPPORTED_SUFFIXES", "extract", "sha256_file")


def __getattr__(name: str) -> Any:
    """``extract``, ``sha256_file`` and ``SUPPORTED_SUFFIXES`` from the ingest module."""
    if name in _FROM_INGEST:
        from desktop.documents import ingest

        return getattr(ingest, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["SUPPORTED_SUFFIXES", "Document", "OutlineEntry", "Page", "extract", "sha256_file"]
