"""The desktop application: the only package that imports Qt (PySide6)."""

from desktop.ui._compat import protect_none

protect_none()
