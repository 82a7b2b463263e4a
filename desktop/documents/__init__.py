"""The Qt-free document layer: PDF, text and Markdown files into pages with token counts."""

from desktop.documents.ingest import SUPPORTED_SUFFIXES, extract, sha256_file
from desktop.documents.model import Document, OutlineEntry, Page

__all__ = ["SUPPORTED_SUFFIXES", "Document", "OutlineEntry", "Page", "extract", "sha256_file"]
