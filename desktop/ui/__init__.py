"""The desktop application: the only package that imports Qt (PySide6)."""
