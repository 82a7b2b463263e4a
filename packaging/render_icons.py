"""Render resources/icons/.../longdoc.svg to the hicolor PNG sizes (run after editing it)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

ICONS = Path(__file__).resolve().parents[1] / "resources" / "icons" / "hicolor"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def main() -> int:
    """Write hicolor/NxN/apps/longdoc.png for every size."""
    app = QGuiApplication(sys.argv)
    renderer = QSvgRenderer(str(ICONS / "scalable" / "apps" / "longdoc.svg"))
    for size in SIZES:
        image = QImage(size, size, QImage.Format.Format_ARGB32)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
        painter.end()
        target = ICONS / f"{size}x{size}" / "apps" / "longdoc.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        image.save(str(target))
    del app
    return 0


if __name__ == "__main__":
    sys.exit(main())
