"""The server: a status-bar indicator, a monitor that polls off the UI thread, a panel.

Two modes. Managed (``settings.endpoint`` empty): the ``server_manager`` starts, stops and
reports the server of the chosen profile. External (``settings.endpoint`` set): Longdoc
only looks at that endpoint's health, model list and metrics (``longdoc_net.endpoint.look``).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace

from PySide6.QtCore import QObject, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QColor, QFontDatabase, QHideEvent, QMouseEvent, QShowEvent
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop.config import Settings, data_dir, load_settings, save_settings
from desktop.errors import ConfigError
from desktop.ui import messages, tasks
from longdoc_net.endpoint import Phase
from server_manager import ServerManager, ServerStatus
from server_manager.manager import endpoint_status, server_status
from server_manager.profiles import available_profiles

log = logging.getLogger("longdoc.ui.server")

POLL_MS = 2_000
LOG_LINES = 5_000

# State colours for the dot: mid-tone, so they read on light and dark palettes alike.
STATE_COLORS = {
    "ready": QColor(46, 160, 67),
    "busy": QColor(52, 120, 246),
    "starting": QColor(219, 150, 20),
    "failed": QColor(214, 69, 65),
    "runtime_down": QColor(219, 150, 20),
    "stopped": QColor(128, 128, 128),
}


def external_status(settings: Settings) -> ServerStatus:
    """How the configured external endpoint is doing (blocking: HTTP with short timeouts)."""
    return endpoint_status(settings.endpoint, settings.api_key, settings.model)


def describe_status(status: ServerStatus) -> str:
    """One line for the status bar, e.g. "Server: starting (Loading weights…)"."""
    text = f"Server: {status.state}"
    if status.state == "starting" and status.stage:
        text += f" ({_stage_label(status.stage)})"
    return text


def _stage_label(stage: str) -> str:
    from server_manager.progress import STAGE_BY_KEY

    known = STAGE_BY_KEY.get(stage)
    if known is not None:
        return known.label
    return {"loading": "Loading the model…"}.get(stage, stage.replace("_", " "))


class ServerMonitor(QObject):
    """Polls the server off the UI thread and reports each look on the UI thread."""

    status_changed = Signal(object)  # ServerStatus

    def __init__(self, session_settings: Settings, interval_ms: int = POLL_MS) -> None:
        super().__init__()
        self.settings = session_settings
        self.status: ServerStatus | None = None
        self.want_gpus = False
        self._task: tasks.Task[ServerStatus] | None = None
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.poll)

    @property
    def external(self) -> bool:
        """True when an endpoint is configured (no managed server)."""
        return bool(self.settings.endpoint)

    def manager(self) -> ServerManager:
        """A manager for the data directory (cheap; blocking calls only off the UI thread)."""
        return ServerManager(data_dir(), self.settings)

    def start(self) -> None:
        """Poll now and then every interval."""
        self._timer.start()
        self.poll()

    def stop(self) -> None:
        """No more polling."""
        self._timer.stop()

    def set_settings(self, settings: Settings) -> None:
        """The settings changed (endpoint, profile): look again at once."""
        self.settings = settings
        self.poll()

    @Slot()
    def poll(self) -> None:
        """One look, unless the previous one is still out."""
        if self._task is not None and not self._task.done:
            return
        settings = self.settings
        gpus = self.want_gpus

        def look() -> ServerStatus:
            return server_status(data_dir(), settings, gpus=gpus)

        self._task = tasks.run_call(
            look,
            receiver=self,
            success=self._on_look_done,
            failure=self._on_look_failed,
            name="server status",
        )

    def _on_look_done(self, status: ServerStatus) -> None:
        self.status = status
        self.status_changed.emit(status)

    def _on_look_failed(self, exc: BaseException) -> None:
        status = ServerStatus(
            profile=self.settings.profile, state=Phase.FAILED, error=messages.describe(exc)
        )
        self._on_look_done(status)


class ServerIndicator(QLabel):
    """The status-bar item: a coloured dot and the state; a click opens the panel."""

    clicked = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setObjectName("serverIndicator")
        self.state = "unknown"
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.set_status(None)

    def set_status(self, status: ServerStatus | None) -> None:
        """Show a status (None: not looked yet)."""
        if status is None:
            self.state = "unknown"
            color = STATE_COLORS["stopped"]
            text = "Server: checking…"
        else:
            self.state = status.state
            color = STATE_COLORS.get(status.state, STATE_COLORS["stopped"])
            text = describe_status(status)
        # Rich text only for the dot's colour; the words are escaped.
        import html

        self.setText(f'<span style="color:{color.name()}">●</span> {html.escape(text)}')
        tip = [text]
        if status is not None:
            if status.endpoint:
                tip.append(f"Endpoint: {status.endpoint}")
            if status.model:
                tip.append(f"Model: {status.model}")
            if status.error:
                tip.append(status.error)
        self.setToolTip("\n".join(tip))

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            self.clicked.emit()
        super().mousePressEvent(event)


class _SelftestRelay(QObject):
    """Selftest progress lines from the worker thread to the panel (queued signal)."""

    line_posted = Signal(str)


class ServerPanel(QDialog):
    """Start, stop, restart, profile, live log, GPU and cache figures."""

    settings_changed = Signal(object)  # Settings (profile chosen here)

    def __init__(self, monitor: ServerMonitor, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Longdoc server")
        self.setObjectName("serverPanel")
        self.monitor = monitor
        self._log_task: tasks.Task[None] | None = None
        self._action: tasks.Task[object] | None = None

        self.mode_label = QLabel()
        self.mode_label.setTextFormat(Qt.TextFormat.PlainText)
        self.mode_label.setWordWrap(True)
        self.state_label = QLabel()
        self.state_label.setTextFormat(Qt.TextFormat.PlainText)
        font = self.state_label.font()
        font.setBold(True)
        self.state_label.setFont(font)
        self.error_label = QLabel()
        self.error_label.setTextFormat(Qt.TextFormat.PlainText)
        self.error_label.setWordWrap(True)

        self.profile_combo = QComboBox()
        self.profile_combo.currentTextChanged.connect(self._on_profile_combo_text_changed)
        self.start_button = QPushButton("Start")
        self.start_button.clicked.connect(self.start_server)
        self.stop_button = QPushButton("Stop")
        self.stop_button.clicked.connect(self.stop_server)
        self.restart_button = QPushButton("Restart")
        self.restart_button.clicked.connect(self.restart_server)
        controls = QHBoxLayout()
        controls.addWidget(QLabel("Profile:"))
        controls.addWidget(self.profile_combo, 1)
        controls.addWidget(self.start_button)
        controls.addWidget(self.stop_button)
        controls.addWidget(self.restart_button)

        self.endpoint_label = QLabel()
        self.model_label = QLabel()
        self.context_label = QLabel()
        self.kv_label = QLabel()
        self.hit_label = QLabel()
        self.requests_label = QLabel()
        self.throughput_label = QLabel()
        self.restarts_label = QLabel()
        for label in (
            self.endpoint_label,
            self.model_label,
            self.context_label,
            self.kv_label,
            self.hit_label,
            self.requests_label,
            self.throughput_label,
            self.restarts_label,
        ):
            label.setTextFormat(Qt.TextFormat.PlainText)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        figures = QFormLayout()
        figures.addRow("Endpoint:", self.endpoint_label)
        figures.addRow("Model:", self.model_label)
        figures.addRow("Context length:", self.context_label)
        figures.addRow("KV cache in use:", self.kv_label)
        figures.addRow("Prefix cache hit rate:", self.hit_label)
        figures.addRow("Requests:", self.requests_label)
        figures.addRow("Generation:", self.throughput_label)
        figures.addRow("Restarts:", self.restarts_label)
        self.selftest_label = QLabel()
        self.selftest_label.setTextFormat(Qt.TextFormat.PlainText)
        self.selftest_label.setWordWrap(True)
        self.selftest_button = QPushButton("Run selftest")
        self.selftest_button.setToolTip(
            "Plant facts at five depths of 8K to 250K-token documents and ask for them: "
            "shows whether the server really reads whole long documents (minutes on a GPU)"
        )
        self.selftest_button.clicked.connect(lambda: self.run_selftest())
        selftest_row = QHBoxLayout()
        selftest_row.addWidget(self.selftest_label, 1)
        selftest_row.addWidget(self.selftest_button)
        figures.addRow("Long-context test:", selftest_row)
        figures_box = QGroupBox("Server")
        figures_box.setLayout(figures)

        self.gpu_tree = QTreeWidget()
        self.gpu_tree.setHeaderLabels(["GPU", "Use", "Memory"])
        self.gpu_tree.setRootIsDecorated(False)
        self.gpu_note = QLabel()
        self.gpu_note.setTextFormat(Qt.TextFormat.PlainText)
        self.gpu_note.setWordWrap(True)
        gpu_layout = QVBoxLayout()
        gpu_layout.addWidget(self.gpu_tree)
        gpu_layout.addWidget(self.gpu_note)
        gpu_box = QGroupBox("GPUs")
        gpu_box.setLayout(gpu_layout)

        top = QHBoxLayout()
        top.addWidget(figures_box, 1)
        top.addWidget(gpu_box, 1)

        self.log_view = QPlainTextEdit()
        self.log_view.setReadOnly(True)
        self.log_view.setObjectName("serverLog")
        self.log_view.setMaximumBlockCount(LOG_LINES)
        self.log_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.log_view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.log_view.setPlaceholderText("The server's log appears here while it runs.")

        layout = QVBoxLayout(self)
        layout.addWidget(self.mode_label)
        layout.addWidget(self.state_label)
        layout.addWidget(self.error_label)
        layout.addLayout(controls)
        layout.addLayout(top)
        layout.addWidget(QLabel("Log"))
        layout.addWidget(self.log_view, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.close_button = buttons.button(QDialogButtonBox.StandardButton.Close)
        self.close_button.setToolTip("Close the panel (Esc); the server keeps running")
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.resize(760, 620)

        monitor.status_changed.connect(self._on_monitor_status_changed)
        self._fill_profiles()
        self._show(monitor.status)
        self._selftest_task: tasks.Task[object] | None = None
        self._selftest_cancel = threading.Event()
        self._selftest_relay = _SelftestRelay()
        self._selftest_relay.line_posted.connect(self._on_selftest_line_posted)
        self._show_last_selftest()

    # --- showing ------------------------------------------------------------------------

    def _fill_profiles(self) -> None:
        self.profile_combo.blockSignals(True)
        self.profile_combo.clear()
        try:
            names = available_profiles(data_dir())
        except OSError:
            names = []
        current = self.monitor.settings.profile
        if current and current not in names:
            names.append(current)
        self.profile_combo.addItems(names)
        self.profile_combo.setCurrentText(current)
        self.profile_combo.blockSignals(False)

    @Slot(object)
    def _on_monitor_status_changed(self, status: ServerStatus) -> None:
        self._show(status)

    def _show(self, status: ServerStatus | None) -> None:
        external = self.monitor.external
        if external:
            self.mode_label.setText(
                f"External server at {self.monitor.settings.endpoint} (set in Settings), "
                "profile “external”. Longdoc does not start or stop it."
            )
            self._show_external_profile()
        else:
            self.mode_label.setText(
                "Longdoc manages this server. It keeps running after you quit unless "
                "Settings say otherwise."
            )
        self.log_view.setPlaceholderText(
            "The log of an external server is wherever that server runs."
            if external
            else "The server's log appears here while it runs."
        )
        for widget in (
            self.profile_combo,
            self.start_button,
            self.stop_button,
            self.restart_button,
        ):
            widget.setEnabled(not external and (self._action is None or self._action.done))
        if status is None:
            self.state_label.setText("Checking…")
            return
        self.state_label.setText(describe_status(status))
        self.error_label.setText(status.error or "")
        self.error_label.setVisible(bool(status.error))
        if not external:
            running = status.state in ("starting", "ready", "busy")
            self.start_button.setEnabled(self.start_button.isEnabled() and not running)
            self.stop_button.setEnabled(self.stop_button.isEnabled() and running)
            # Nothing to restart while stopped: Start is the way.
            self.restart_button.setEnabled(self.restart_button.isEnabled() and running)
        self.endpoint_label.setText(status.endpoint or "—")
        self.model_label.setText(status.model or "—")
        m = status.metrics
        context = m.get("context_len")
        self.context_label.setText(f"{int(context):,} tokens" if context else "—")
        self.kv_label.setText(_pct(m.get("token_usage")))
        self.hit_label.setText(_pct(m.get("cache_hit_rate")))
        if "running_requests" in m or "queued_requests" in m:
            self.requests_label.setText(
                f"{int(m.get('running_requests', 0))} running, "
                f"{int(m.get('queued_requests', 0))} waiting"
            )
        else:
            self.requests_label.setText("—")
        throughput = m.get("gen_throughput")
        self.throughput_label.setText(f"{throughput:,.1f} tokens/s" if throughput else "—")
        self.restarts_label.setText(str(status.restarts))
        self.gpu_tree.clear()
        for gpu in status.gpus:
            use = f"{gpu.utilization_pct:.0f} %" if gpu.utilization_pct is not None else "—"
            if gpu.memory_used_mib is not None and gpu.memory_total_mib:
                memory = (
                    f"{gpu.memory_used_mib / 1024:,.1f} of {gpu.memory_total_mib / 1024:,.1f} GiB"
                )
            else:
                memory = "—"
            QTreeWidgetItem(self.gpu_tree, [f"{gpu.index}: {gpu.name}", use, memory])
        note = getattr(status, "gpu_note", "")
        if external:
            note = "GPU figures are shown for servers Longdoc manages."
            if status.state in ("ready", "busy") and not (m.keys() - {"context_len"}):
                note += " This server exposes no metrics (/metrics)."
        elif not status.gpus and not note:
            note = "No GPU figures yet."
        self.gpu_note.setText(note)
        self.gpu_note.setVisible(bool(note))

    def _show_external_profile(self) -> None:
        """An external server is the ``external`` profile, whatever the file's choice."""
        if self.profile_combo.currentText() != "external":
            self.profile_combo.blockSignals(True)
            if self.profile_combo.findText("external") < 0:
                self.profile_combo.addItem("external")
            self.profile_combo.setCurrentText("external")
            self.profile_combo.blockSignals(False)

    # --- log ------------------------------------------------------------------------------

    def showEvent(self, event: QShowEvent) -> None:
        self.monitor.want_gpus = True
        self.monitor.poll()
        self._follow_log()
        super().showEvent(event)

    def hideEvent(self, event: QHideEvent) -> None:
        self.monitor.want_gpus = False
        self._stop_log()
        super().hideEvent(event)

    def _follow_log(self) -> None:
        if self.monitor.external or (self._log_task is not None and not self._log_task.done):
            return
        self.log_view.clear()
        manager = self.monitor.manager()
        self._log_task = tasks.run_stream(
            lambda cancel: manager.logs(follow=True, stop=cancel),
            receiver=self,
            events=self._on_log_lines,
            failure=lambda exc: self.log_view.appendPlainText(f"({messages.describe(exc)})"),
            name="server log",
        )

    def _stop_log(self) -> None:
        if self._log_task is not None:
            self._log_task.cancel()
            self._log_task.detach()
            self._log_task = None

    def _on_log_lines(self, lines: list[str]) -> None:
        bar = self.log_view.verticalScrollBar()
        follow = bar.value() >= bar.maximum() - 2
        self.log_view.appendPlainText("\n".join(line.rstrip("\n") for line in lines))
        if follow:
            bar.setValue(bar.maximum())

    # --- long-context selftest -------------------------------------------------------------

    def _show_last_selftest(self) -> None:
        from desktop.selftest import load_reports, summary

        runs = load_reports(data_dir())
        self.selftest_label.setText(summary(runs[-1]) if runs else "Not run yet.")

    def run_selftest(self, lengths: tuple[int, ...] | None = None) -> None:
        """Run ``longdoc server selftest`` against this server; pressing again stops it."""
        if self._selftest_task is not None and not self._selftest_task.done:
            self._selftest_cancel.set()
            self.selftest_button.setEnabled(False)
            return
        from desktop.answering.service import resolve_endpoint
        from desktop.selftest import DEFAULT_LENGTHS, run_for_settings
        from server_manager import connection_for

        settings = self.monitor.settings
        home = data_dir()
        cancel = self._selftest_cancel = threading.Event()
        relay = self._selftest_relay

        def done(_report: object) -> None:
            self.selftest_button.setText("Run selftest")
            self.selftest_button.setEnabled(True)
            self._show_last_selftest()

        def failed(exc: BaseException) -> None:
            done(None)
            self.selftest_label.setText(f"Selftest stopped: {messages.describe(exc)}")

        self.selftest_button.setText("Stop selftest")
        self.selftest_label.setText("Starting…")
        self._selftest_task = tasks.run_call(
            lambda: run_for_settings(
                settings,
                resolve_endpoint(settings, lambda: connection_for(home, settings)),
                home,
                lengths or DEFAULT_LENGTHS,
                progress=relay.line_posted.emit,
                cancel=cancel,
            ),
            receiver=self,
            success=done,
            failure=failed,
            name="selftest",
        )

    @Slot(str)
    def _on_selftest_line_posted(self, line: str) -> None:
        self.selftest_label.setText(line)

    # --- actions --------------------------------------------------------------------------

    def _run(self, what: str, job: object) -> None:
        if self._action is not None and not self._action.done:
            return

        def done(_: object) -> None:
            self._action = None
            messages.info(f"Server: {what} done.")
            self.monitor.poll()
            self._show(self.monitor.status)
            self._stop_log()
            if self.isVisible():
                self._follow_log()

        def failed(exc: BaseException) -> None:
            self._action = None
            messages.error(exc, self, serious=True)
            self.monitor.poll()
            self._show(self.monitor.status)

        assert callable(job)
        self._action = tasks.run_call(job, receiver=self, success=done, failure=failed, name=what)
        self._show(self.monitor.status)
        self.monitor.poll()

    def start_server(self) -> None:
        """Launch (or adopt) the server of the chosen profile; stages show as it loads."""
        manager = self.monitor.manager()
        self._run("start", lambda: manager.start(wait=False))

    def stop_server(self) -> None:
        """Stop the managed server."""
        manager = self.monitor.manager()
        self._run("stop", manager.stop)

    def restart_server(self) -> None:
        """Stop and start again (e.g. with a new profile)."""
        manager = self.monitor.manager()
        self._run("restart", lambda: manager.restart(wait=False))

    @Slot(str)
    def _on_profile_combo_text_changed(self, name: str) -> None:
        if not name or name == self.monitor.settings.profile:
            return
        try:
            # Edit the file's values, not the environment's overrides (LONGDOC_ENDPOINT...).
            save_settings(replace(load_settings(env=False), profile=name))
            settings = load_settings()
        except (ConfigError, OSError) as exc:
            messages.error(exc if isinstance(exc, ConfigError) else str(exc), self, serious=True)
            return
        self.settings_changed.emit(settings)
        messages.info(f"Profile {name} chosen; restart the server to use it.")


def _pct(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value * 100:.1f} %" if value <= 1 else f"{value:.1f} %"
