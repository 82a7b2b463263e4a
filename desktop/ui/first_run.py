"""The first-run view: what to do first, in the place of the empty document and ask panes.

Three steps a new user needs: add documents (drop or open), connect to a server (start
the local one, or enter an endpoint and test the connection), and what Longdoc does
differently. Shown while no document is open; the window swaps it for the document and
the ask panel as soon as one is.
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QFont, QPalette
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from desktop.config import Settings, load_settings, save_settings
from desktop.errors import ConfigError
from desktop.ui import messages, tasks
from desktop.ui.server_panel import describe_status, external_status
from longdoc_net.endpoint import api_root as base_url
from server_manager import ServerStatus

# The column of text stays readable on a wide window.
MAX_WIDTH = 680

DIFFERENCES = (
    (
        "Whole documents",
        "The complete text goes to the model in one prompt, up to 256K "
        "tokens: no chunks, no retrieval, nothing cut off silently. If a document does not "
        "fit, Longdoc says so before sending and proposes pages that do.",
    ),
    (
        "Checked quotes",
        "Answers cite pages, and every quote is looked up in the document: "
        "marked ✓ where it is on the cited page, ⚠ with a link when it is on another page, "
        "and ✗ in red when the document does not contain it.",
    ),
    (
        "Yours, offline",
        "Your own server, your own GPUs. Documents and answers stay in a "
        "local database: a repeated question is answered at once, without the server.",
    ),
)


def _heading(text: str, scale: float = 1.15) -> QLabel:
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)
    font = label.font()
    font.setPointSizeF(font.pointSizeF() * scale)
    font.setWeight(QFont.Weight.DemiBold)
    label.setFont(font)
    label.setWordWrap(True)
    return label


def _text(text: str) -> QLabel:
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setWordWrap(True)
    return label


class FirstRunView(QScrollArea):
    """Add documents, connect a server, and why Longdoc; the window wires the signals."""

    open_requested = Signal()
    open_folder_requested = Signal()
    start_server_requested = Signal()
    settings_changed = Signal(object)  # Settings, saved with the tested endpoint

    def __init__(self, settings: Settings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("firstRun")
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.settings = settings
        self._test: tasks.Task[ServerStatus] | None = None
        self._tested: Settings | None = None

        title = _heading("Ask questions about whole documents", 1.7)
        intro = _text(
            "Longdoc reads a complete contract, manual or transcript and answers with page "
            "citations you can click. Two steps to the first answer:"
        )

        # 1. Documents
        self.open_button = QPushButton("Open documents…")
        self.open_button.setToolTip("Add PDF, text or Markdown files (Ctrl+O)")
        self.open_button.clicked.connect(self.open_requested)
        self.folder_button = QPushButton("Add a folder…")
        self.folder_button.clicked.connect(self.open_folder_requested)
        documents = self._step(
            "1  Add documents",
            "Drop files or folders anywhere on this window, or:",
            [self.open_button, self.folder_button],
        )

        # 2. Server
        self.server_label = _text("Checking the server…")
        self.server_label.setObjectName("firstRunServerState")
        self.start_button = QPushButton("Start the local server")
        self.start_button.setToolTip("Start SGLang on this machine's GPUs (Server ▸ Server panel)")
        self.start_button.clicked.connect(self.start_server_requested)
        self.endpoint_edit = QLineEdit(settings.endpoint)
        self.endpoint_edit.setPlaceholderText("http://gpu-server:30000")
        self.endpoint_edit.setClearButtonEnabled(True)
        self.key_edit = QLineEdit(settings.api_key)
        self.key_edit.setPlaceholderText("API key (if the server needs one)")
        self.key_edit.setEchoMode(QLineEdit.EchoMode.PasswordEchoOnEdit)
        self.test_button = QPushButton("Test connection")
        self.test_button.clicked.connect(self.test_connection)
        self.endpoint_edit.returnPressed.connect(self.test_connection)
        self.endpoint_edit.textChanged.connect(self._on_endpoint_edit_text_changed)
        self.key_edit.textChanged.connect(self._on_endpoint_edit_text_changed)
        self.use_button = QPushButton("Use this server")
        self.use_button.setEnabled(False)
        self.use_button.clicked.connect(self.use_tested_server)
        self.test_label = _text("")
        self.test_label.setObjectName("connectionTest")
        self.test_label.hide()
        endpoint_row = QHBoxLayout()
        endpoint_row.addWidget(self.endpoint_edit, 3)
        endpoint_row.addWidget(self.key_edit, 2)
        test_row = QHBoxLayout()
        test_row.addWidget(self.test_button)
        test_row.addWidget(self.use_button)
        test_row.addStretch(1)
        server = self._step(
            "2  Connect to a server",
            "Longdoc asks Qwen3.5 served by SGLang: start the server Longdoc manages on "
            "this machine, or use one that already runs elsewhere.",
            [self.start_button],
        )
        server_layout = server.layout()
        assert isinstance(server_layout, QVBoxLayout)
        server_layout.insertWidget(2, self.server_label)
        server_layout.addWidget(_text("Or a server at:"))
        server_layout.addLayout(endpoint_row)
        server_layout.addLayout(test_row)
        server_layout.addWidget(self.test_label)

        # 3. What is different
        different = QFrame()
        different_layout = QVBoxLayout(different)
        different_layout.setContentsMargins(0, 8, 0, 0)
        different_layout.addWidget(_heading("What Longdoc does differently"))
        for name, words in DIFFERENCES:
            different_layout.addWidget(_heading(name, 1.0))
            different_layout.addWidget(_text(words))

        column = QWidget()
        column.setMaximumWidth(MAX_WIDTH)
        layout = QVBoxLayout(column)
        layout.setContentsMargins(28, 28, 28, 28)
        layout.setSpacing(14)
        layout.addWidget(title)
        layout.addWidget(intro)
        layout.addWidget(documents)
        layout.addWidget(server)
        layout.addWidget(different)
        layout.addStretch(1)
        outer = QWidget()
        outer_layout = QHBoxLayout(outer)
        outer_layout.addStretch(1)
        outer_layout.addWidget(column, 100)
        outer_layout.addStretch(1)
        self.setWidget(outer)

    def _step(self, heading: str, words: str, buttons: list[QPushButton]) -> QFrame:
        frame = QFrame()
        frame.setFrameShape(QFrame.Shape.StyledPanel)
        frame.setBackgroundRole(QPalette.ColorRole.AlternateBase)
        frame.setAutoFillBackground(True)
        layout = QVBoxLayout(frame)
        layout.setContentsMargins(16, 14, 16, 14)
        layout.addWidget(_heading(heading))
        layout.addWidget(_text(words))
        row = QHBoxLayout()
        for button in buttons:
            row.addWidget(button)
        row.addStretch(1)
        layout.addLayout(row)
        return frame

    # --- server ------------------------------------------------------------------------

    def set_server_status(self, status: ServerStatus | None, external: bool) -> None:
        """The server as the monitor last saw it: Start only when it can help."""
        if status is None:
            self.server_label.setText("Checking the server…")
            return
        text = describe_status(status)
        if status.state in ("ready", "busy"):
            text = f"✓ {text} — you can ask as soon as a document is open."
        elif status.error:
            text += f" — {status.error}"
        if external:
            text = f"{text} (the server at {status.endpoint or self.settings.endpoint})"
        self.server_label.setText(text)
        running = status.state in ("starting", "ready", "busy")
        self.start_button.setEnabled(not external and not running)

    def set_settings(self, settings: Settings) -> None:
        """The settings in effect changed (elsewhere, or by "Use this server")."""
        self.settings = settings

    def test_connection(self) -> None:
        """Ask the endpoint in the box for its health and model (off the UI thread)."""
        url = self.endpoint_edit.text().strip()
        if not url.startswith(("http://", "https://")):
            self._show_test("Enter the server's address, starting with http:// or https://.")
            return
        if self._test is not None and not self._test.done:
            return
        candidate = replace(self.settings, endpoint=base_url(url), api_key=self.key_edit.text())
        self.test_button.setEnabled(False)
        self.use_button.setEnabled(False)
        self._show_test(f"Connecting to {candidate.endpoint}…")

        def done(status: ServerStatus) -> None:
            self.test_button.setEnabled(True)
            if status.state in ("ready", "busy"):
                context = status.metrics.get("context_len")
                size = f", context {int(context):,} tokens" if context else ""
                self._show_test(f"Connected: {status.model or 'a model'}{size}.", ok=True)
                self._tested = candidate
                self.use_button.setEnabled(True)
            else:
                why = status.error or describe_status(status)
                self._show_test(f"Not ready: {why}")

        def failed(exc: BaseException) -> None:
            self.test_button.setEnabled(True)
            self._show_test(messages.describe(exc))

        self._test = tasks.run_call(
            lambda: external_status(candidate),
            receiver=self,
            success=done,
            failure=failed,
            name="connection test",
        )

    def _show_test(self, text: str, ok: bool = False) -> None:
        self.test_label.setText(text)
        font = self.test_label.font()
        font.setBold(ok)
        self.test_label.setFont(font)
        self.test_label.show()

    @Slot(str)
    def _on_endpoint_edit_text_changed(self, _text: str) -> None:
        # A changed address or key must be tested again before it is used.
        self._tested = None
        self.use_button.setEnabled(False)

    def use_tested_server(self) -> None:
        """Save the tested endpoint and key in longdoc.toml and use them from now on."""
        tested = self._tested
        if tested is None:
            return
        try:
            # The file's values, not the environment's overrides (LONGDOC_ENDPOINT...).
            saved = replace(
                load_settings(env=False), endpoint=tested.endpoint, api_key=tested.api_key
            )
            save_settings(saved)
            settings = load_settings()
        except (ConfigError, OSError) as exc:
            messages.error(exc if isinstance(exc, ConfigError) else str(exc), self, serious=True)
            return
        self.settings = settings
        self.use_button.setEnabled(False)
        self.settings_changed.emit(settings)
        messages.info(f"Using the server at {tested.endpoint}.")
