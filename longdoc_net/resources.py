"""Where Longdoc's data files are: ``resources/`` of a checkout, or the copy a wheel
installs under the prefix (``share/longdoc/``). The app's prompts and the server
manager's profiles are found by the same rule."""

from __future__ import annotations

import sys
from pathlib import Path


def resources_dir(name: str) -> Path:
    """The checkout's ``resources/<name>``, or the copy a wheel installs under the prefix."""
    source = Path(__file__).resolve().parents[1] / "resources" / name
    if source.is_dir():
        return source
    return Path(sys.prefix) / "share" / "longdoc" / name
