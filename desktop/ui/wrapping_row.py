"""Two groups side by side where they fit, one above the other where the panel is narrow:
nothing is squeezed below its words (a "Thinl" for "Think" at the minimum size)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QBoxLayout, QHBoxLayout, QLayout, QSizePolicy, QWidget


class WrappingRow(QWidget):
    """``first`` then ``second`` (both horizontal layouts) on one row when the width
    holds both at their preferred sizes, else on two."""

    def __init__(
        self,
        first: QHBoxLayout,
        second: QHBoxLayout,
        first_width: Callable[[], int] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        # The first group's width on one line (a wrapping label's hint is narrower).
        self.first_width = first_width or (lambda: first.sizeHint().width())
        self.first = first
        self.second = second
        self.box = QBoxLayout(QBoxLayout.Direction.LeftToRight, self)
        self.box.setContentsMargins(0, 0, 0, 0)
        self.box.addLayout(first, 1)
        self.box.addLayout(second)

    @property
    def wrapped(self) -> bool:
        """The second group is on a row of its own."""
        return self.box.direction() == QBoxLayout.Direction.TopToBottom

    def resizeEvent(self, event: QResizeEvent) -> None:
        """One row when both groups fit side by side at their preferred widths."""
        self.arrange(event.size().width())
        super().resizeEvent(event)

    def _fits(self, width: int) -> bool:
        """Both groups side by side at their preferred widths."""
        spacing = max(self.box.spacing(), 0)
        return width >= self.first_width() + spacing + self.second.sizeHint().width()

    def hasHeightForWidth(self) -> bool:
        """Its height depends on its width: one row or two."""
        return True

    def heightForWidth(self, width: int) -> int:
        """One row's height where both groups fit side by side, else both rows'."""
        spacing = max(self.box.spacing(), 0)
        second = self.second.sizeHint().height()
        fits = self._fits(width)
        room = width - (self.second.sizeHint().width() + spacing if fits else 0)
        first = (
            self.first.heightForWidth(room)
            if self.first.hasHeightForWidth()
            else self.first.sizeHint().height()
        )
        return max(first, second) if fits else first + spacing + second

    def arrange(self, width: int | None = None) -> None:
        """Choose one row or two for ``width`` (now: after the groups' words changed)."""
        fits = self._fits(self.width() if width is None else width)
        direction = QBoxLayout.Direction.LeftToRight if fits else QBoxLayout.Direction.TopToBottom
        if direction != self.box.direction():
            self.box.setDirection(direction)
            self.box.activate()  # now: what is read next (a link's place) is where it is


def unsqueezable(widget: QWidget) -> QWidget:
    """``widget`` never narrower than its size hint (its words), never taller."""
    widget.setSizePolicy(QSizePolicy.Policy.Minimum, QSizePolicy.Policy.Fixed)
    return widget


def min_height_for_width(layout: QLayout, width: int) -> int:
    """What a vertical ``layout`` needs at ``width``: a wrapping label's lines, every
    other item's minimum (Qt's own minimum counts a wrapping label as one line)."""
    margins = layout.contentsMargins()
    inner = width - margins.left() - margins.right()
    heights = []
    for index in range(layout.count()):
        item = layout.itemAt(index)
        if item is None or item.isEmpty():
            continue
        # Asked of the widget itself: a layout item asks the widget's layout instead,
        # which does not know that a WrappingRow's height depends on its width.
        sized = item.widget() or item
        least = item.minimumSize().height()  # an explicit minimum included
        hfw = sized.hasHeightForWidth()
        heights.append(max(sized.heightForWidth(inner), least) if hfw else least)
    spacing = max(layout.spacing(), 0) * max(len(heights) - 1, 0)
    return sum(heights) + spacing + margins.top() + margins.bottom()


def keep_lines(widget: QWidget, layout: QLayout, width: int) -> None:
    """Make ``widget`` (laid out vertically by ``layout``) never shorter than its items
    need at ``width``, so a short window does not draw rows over each other: the
    window's minimum height follows."""
    needed = min_height_for_width(layout, width)
    if needed != widget.minimumHeight():
        widget.setMinimumHeight(needed)
