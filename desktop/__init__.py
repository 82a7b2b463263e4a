"""Longdoc: ask questions about whole long documents with a local Qwen3.5 served by SGLang."""

__version__ = "0.1.0"
