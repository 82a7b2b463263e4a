"""Settings: every field of ``longdoc.toml``, validated as you type, saved atomically."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from desktop.config import MAX_TOKENS, Settings, config_path, data_dir, save_settings
from desktop.errors import ConfigError


class SettingsDialog(QDialog):
    """Edits the settings file's values (environment overrides are not written back)."""

    settings_saved = Signal(object)  # Settings as saved

    def __init__(self, settings: Settings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Longdoc settings")
        self.setObjectName("settingsDialog")
        self.original = settings

        self.endpoint_edit = QLineEdit(settings.endpoint)
        self.endpoint_edit.setPlaceholderText("empty: the server Longdoc manages")
        self.model_edit = QLineEdit(settings.model)
        self.model_edit.setPlaceholderText("empty: the server's model")
        self.api_key_edit = QLineEdit(settings.api_key)
        self.api_key_edit.setEchoMode(QLineEdit.EchoMode.PasswordEchoOnEdit)
        self.api_key_edit.setPlaceholderText("empty: none, or the managed server's key")
        self.thinking_box = QCheckBox("Let the model think before answering")
        self.thinking_box.setChecked(settings.thinking)
        self.reserve_spin = QSpinBox()
        # The minimum is not enforced by the spin box on purpose: validate() says why.
        self.reserve_spin.setRange(0, 1_000_000)
        self.reserve_spin.setSingleStep(1024)
        self.reserve_spin.setGroupSeparatorShown(True)
        self.reserve_spin.setSuffix(" tokens")
        self.reserve_spin.setValue(settings.answer_reserve)
        self.prefill_spin = QSpinBox()
        self.prefill_spin.setRange(0, 1_000_000)
        self.prefill_spin.setGroupSeparatorShown(True)
        self.prefill_spin.setSuffix(" tokens/s")
        self.prefill_spin.setValue(settings.min_prefill_rate)
        self.prefill_spin.setToolTip(
            "The slowest prefill your GPU does; sets how long to wait for the first token"
        )
        self.context_spin = QSpinBox()
        self.context_spin.setRange(0, MAX_TOKENS)
        self.context_spin.setSingleStep(1024)
        self.context_spin.setGroupSeparatorShown(True)
        self.context_spin.setSpecialValueText("as the server reports")
        self.context_spin.setSuffix(" tokens")
        self.context_spin.setValue(settings.context_length)
        self.context_spin.setToolTip(
            "For servers that do not report their context (transformers serve, llama.cpp, "
            "routers); when both exist the smaller wins"
        )
        self.profile_combo = QComboBox()
        self.profile_combo.setEditable(False)
        names = _profiles()
        if settings.profile not in names:
            names.append(settings.profile)
        self.profile_combo.addItems(names)
        self.profile_combo.setCurrentText(settings.profile)
        self.runtime_combo = QComboBox()
        self.runtime_combo.addItem("automatic", "")
        self.runtime_combo.addItem("podman", "podman")
        self.runtime_combo.addItem("docker", "docker")
        index = self.runtime_combo.findData(settings.container_runtime)
        self.runtime_combo.setCurrentIndex(max(index, 0))
        self.keep_box = QCheckBox("Keep the server running after Longdoc quits")
        self.keep_box.setChecked(settings.keep_server_running)

        form = QFormLayout()
        form.addRow("Server endpoint:", self.endpoint_edit)
        form.addRow("Model:", self.model_edit)
        form.addRow("API key:", self.api_key_edit)
        form.addRow("", self.thinking_box)
        form.addRow("Answer reserve:", self.reserve_spin)
        form.addRow("Slowest prefill:", self.prefill_spin)
        form.addRow("Context length:", self.context_spin)
        form.addRow("Server profile:", self.profile_combo)
        form.addRow("Container runtime:", self.runtime_combo)
        form.addRow("", self.keep_box)

        self.error_label = QLabel()
        self.error_label.setObjectName("settingsError")
        self.error_label.setTextFormat(Qt.TextFormat.PlainText)
        self.error_label.setWordWrap(True)
        font = self.error_label.font()
        font.setBold(True)
        self.error_label.setFont(font)
        self.where_label = QLabel(
            f"Saved in {config_path()}. Server profiles: {data_dir() / 'profiles'}."
        )
        self.where_label.setTextFormat(Qt.TextFormat.PlainText)
        self.where_label.setWordWrap(True)
        self.where_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self._on_buttons_accepted)
        self.buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.error_label)
        layout.addWidget(self.where_label)
        layout.addWidget(self.buttons)

        for edit in (self.endpoint_edit, self.model_edit, self.api_key_edit):
            edit.textChanged.connect(self._on_any_changed)
        for spin in (self.reserve_spin, self.prefill_spin, self.context_spin):
            spin.valueChanged.connect(self._on_any_changed)
        for combo in (self.profile_combo, self.runtime_combo):
            combo.currentIndexChanged.connect(self._on_any_changed)
        self.resize(560, self.sizeHint().height())
        self._on_any_changed()

    def current(self) -> Settings:
        """The settings as edited (not validated)."""
        return replace(
            self.original,
            endpoint=self.endpoint_edit.text().strip(),
            model=self.model_edit.text().strip(),
            api_key=self.api_key_edit.text().strip(),
            thinking=self.thinking_box.isChecked(),
            answer_reserve=self.reserve_spin.value(),
            min_prefill_rate=self.prefill_spin.value(),
            context_length=self.context_spin.value(),
            profile=self.profile_combo.currentText(),
            container_runtime=str(self.runtime_combo.currentData() or ""),
            keep_server_running=self.keep_box.isChecked(),
        )

    def error(self) -> str | None:
        """The validation error of the edited settings, or None."""
        try:
            self.current().validate()
        except ConfigError as exc:
            return str(exc)
        return None

    @Slot()
    def _on_any_changed(self) -> None:
        error = self.error()
        self.error_label.setText(error or "")
        self.error_label.setVisible(error is not None)
        self.buttons.button(QDialogButtonBox.StandardButton.Save).setEnabled(error is None)

    @Slot()
    def _on_buttons_accepted(self) -> None:
        settings = self.current()
        try:
            save_settings(settings)
        except ConfigError as exc:
            self.error_label.setText(str(exc))
            self.error_label.show()
            return
        except OSError as exc:
            self.error_label.setText(f"Could not save {config_path()}: {exc.strerror or exc}")
            self.error_label.show()
            return
        self.settings_saved.emit(settings)
        self.accept()


def _profiles() -> list[str]:
    try:
        from server_manager.profiles import available_profiles

        return available_profiles(data_dir())
    except (ImportError, OSError):
        return []
