"""Help ▸ Check this workstation: the ``longdoc doctor`` checklist in a dialog."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Slot
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop.doctor import Check, Context, run_checks
from desktop.ui import tasks

_STATUS_TEXT = {"ok": "✓ ok", "warning": "⚠ warning", "problem": "✗ problem"}


class DoctorDialog(QDialog):
    """Runs the checks off the UI thread and lists them with their fixes."""

    def __init__(self, context: Context, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Check this workstation")
        self.resize(900, 520)
        self._context = context
        self.checks: list[Check] = []
        self.summary = QLabel("Checking…")
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        self.tree = QTreeWidget()
        self.tree.setColumnCount(3)
        self.tree.setHeaderLabels(["Status", "Check", "What was found, and the fix"])
        self.tree.setRootIsDecorated(False)
        self.tree.setWordWrap(True)
        self.tree.setUniformRowHeights(False)
        header = self.tree.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.again_button = QPushButton("Check &again")
        self.again_button.clicked.connect(self._on_again_button_clicked)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.addButton(self.again_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(self.tree, 1)
        layout.addWidget(buttons)
        QShortcut(QKeySequence(QKeySequence.StandardKey.Refresh), self, self.run)
        self.run()

    @Slot()
    def run(self) -> None:
        """Start (or restart) the checks in the background."""
        self.again_button.setEnabled(False)
        self.summary.setText("Checking…")
        self.tree.clear()
        context = self._context
        tasks.run_call(
            lambda: run_checks(context),
            receiver=self,
            success=self._on_checks_done,
            failure=self._on_checks_failed,
            name="doctor",
        )

    @Slot()
    def _on_again_button_clicked(self) -> None:
        self.run()

    def _on_checks_done(self, checks: list[Check]) -> None:
        self.checks = checks
        self.tree.clear()
        for check in checks:
            text = check.detail + (f"\nFix: {check.fix}" if check.fix else "")
            item = QTreeWidgetItem([_STATUS_TEXT[check.status], check.name, text])
            item.setToolTip(2, html.escape(text))
            if check.status != "ok":
                font = item.font(0)
                font.setBold(True)
                item.setFont(0, font)
            self.tree.addTopLevelItem(item)
        problems = sum(c.status == "problem" for c in checks)
        warnings = sum(c.status == "warning" for c in checks)
        if problems:
            self.summary.setText(
                f"{problems} problem{'s' * (problems != 1)} to fix, "
                f"{warnings} warning{'s' * (warnings != 1)}."
            )
        elif warnings:
            self.summary.setText(f"Ready, with {warnings} warning{'s' * (warnings != 1)}.")
        else:
            self.summary.setText("Everything Longdoc needs is in place.")
        self.again_button.setEnabled(True)

    def _on_checks_failed(self, exc: BaseException) -> None:
        self.summary.setText(f"The checks could not run: {exc}")
        self.again_button.setEnabled(True)
