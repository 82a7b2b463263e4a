"""Settings: every field of ``longdoc.toml``, validated as you type, saved atomically.

The fields, their labels, hints, bounds and lists come from the settings' one declaration
(``desktop.config.SETTINGS``): a setting declared there appears here with an editor for its
type. Only the server profile's list is found here (the profiles on disk). Beside each field
the dialog says what is in effect and where that comes from (flag, environment, file,
default), since the environment overrides the file and the dialog edits the file.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

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

from desktop.config import (
    SETTINGS,
    Settings,
    config_path,
    data_dir,
    save_settings,
    setting_sources,
)
from desktop.errors import ConfigError


def _shown(name: str, value: Any) -> str:
    """A value as the "in effect" line shows it."""
    spec = SETTINGS[name]
    if spec.secret:
        return "set" if value else "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if not value and spec.empty:
        return spec.empty
    if isinstance(value, int):
        return f"{value:,} {spec.unit}".rstrip()
    return str(value) if value else "empty"


class SettingsDialog(QDialog):
    """Edits the settings file's values; shows what is in effect and why."""

    settings_saved = Signal(object)  # Settings as saved

    def __init__(
        self,
        settings: Settings,
        parent: QWidget | None = None,
        effective: Settings | None = None,
        sources: dict[str, str] | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Longdoc settings")
        self.setObjectName("settingsDialog")
        self.original = settings
        self.effective = effective if effective is not None else settings
        self.sources = sources if sources is not None else setting_sources()
        self.editors: dict[str, QWidget] = {}
        self.effect_labels: dict[str, QLabel] = {}

        form = QFormLayout()
        for f in fields(Settings):
            editor = self._editor(f.name, getattr(settings, f.name))
            self.editors[f.name] = editor
            spec = SETTINGS[f.name]
            label = "" if spec.kind is bool else f"{spec.label}:"
            if spec.help:
                editor.setToolTip(spec.help[:1].upper() + spec.help[1:])
            effect = QLabel()
            effect.setObjectName(f"effect_{f.name}")
            effect.setTextFormat(Qt.TextFormat.PlainText)
            effect.setWordWrap(True)
            effect.setForegroundRole(QPalette.ColorRole.PlaceholderText)
            self.effect_labels[f.name] = effect
            box = QWidget()
            column = QVBoxLayout(box)
            column.setContentsMargins(0, 0, 0, 0)
            column.setSpacing(1)
            column.addWidget(editor)
            column.addWidget(effect)
            form.addRow(label, box)

        # The names the rest of the app (and the tests) use for the editors.
        self.endpoint_edit: QLineEdit = self.editors["endpoint"]  # type: ignore[assignment]
        self.model_edit: QLineEdit = self.editors["model"]  # type: ignore[assignment]
        self.api_key_edit: QLineEdit = self.editors["api_key"]  # type: ignore[assignment]
        self.thinking_box: QCheckBox = self.editors["thinking"]  # type: ignore[assignment]
        self.reserve_spin: QSpinBox = self.editors["answer_reserve"]  # type: ignore[assignment]
        self.prefill_spin: QSpinBox = self.editors["min_prefill_rate"]  # type: ignore[assignment]
        self.profile_combo: QComboBox = self.editors["profile"]  # type: ignore[assignment]
        self.runtime_combo: QComboBox = self.editors["container_runtime"]  # type: ignore[assignment]
        self.keep_box: QCheckBox = self.editors["keep_server_running"]  # type: ignore[assignment]

        self.error_label = QLabel()
        self.error_label.setObjectName("settingsError")
        self.error_label.setTextFormat(Qt.TextFormat.PlainText)
        self.error_label.setWordWrap(True)
        font = self.error_label.font()
        font.setBold(True)
        self.error_label.setFont(font)
        variables = ", ".join(spec.env for spec in SETTINGS.values() if spec.env)
        self.where_label = QLabel(
            f"Saved in {config_path()}. Server profiles: {data_dir() / 'profiles'}. "
            f"The environment ({variables}) overrides the file; command-line flags override "
            "both."
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
        self.resize(600, self.sizeHint().height())
        self._on_any_changed()

    # --- one editor per field, by its type -------------------------------------------------

    def _editor(self, name: str, value: Any) -> QWidget:
        spec = SETTINGS[name]
        if name == "profile":
            combo = QComboBox()
            names = _profiles()
            if value not in names:
                names.append(value)
            combo.addItems(names)
            combo.setCurrentText(value)
            combo.currentIndexChanged.connect(self._on_any_changed)
            return combo
        if spec.choices:
            combo = QComboBox()
            for choice in spec.choices:
                combo.addItem(choice or spec.empty, choice)
            combo.setCurrentIndex(max(combo.findData(value), 0))
            combo.currentIndexChanged.connect(self._on_any_changed)
            return combo
        if isinstance(value, bool):
            box = QCheckBox(spec.label)
            box.setChecked(value)
            box.toggled.connect(self._on_any_changed)
            return box
        if isinstance(value, int):
            spin = QSpinBox()
            # No minimum enforced by the spin box on purpose: validate() says why.
            spin.setRange(0, 16_777_216)
            spin.setGroupSeparatorShown(True)
            spin.setSuffix(f" {spec.unit}" if spec.unit else "")
            if spec.empty:
                spin.setSpecialValueText(spec.empty)  # shown for 0, not "0 tokens"
            spin.setSingleStep(spec.step)
            spin.setValue(value)
            spin.valueChanged.connect(self._on_any_changed)
            return spin
        edit = QLineEdit(str(value))
        edit.setPlaceholderText(f"empty: {spec.empty}" if spec.empty else "")
        if spec.secret:
            edit.setEchoMode(QLineEdit.EchoMode.PasswordEchoOnEdit)
        edit.textChanged.connect(self._on_any_changed)
        return edit

    def _value(self, name: str) -> Any:
        editor = self.editors[name]
        if isinstance(editor, QComboBox):
            data = editor.currentData()
            return str(data) if data is not None else editor.currentText()
        if isinstance(editor, QCheckBox):
            return editor.isChecked()
        if isinstance(editor, QSpinBox):
            return editor.value()
        assert isinstance(editor, QLineEdit)
        return editor.text().strip()

    def current(self) -> Settings:
        """The settings as edited (not validated)."""
        return replace(self.original, **{f.name: self._value(f.name) for f in fields(Settings)})

    def in_effect(self, name: str) -> str:
        """The "in effect" line of a field: the value that applies now, and where it is from."""
        value = _shown(name, getattr(self.effective, name))
        source = self.sources.get(name, "default")
        if source == "flag":
            where = "a command-line flag"
        elif source.startswith("environment"):
            var = source.removeprefix("environment (").rstrip(")")
            where = f"the environment variable {var}, which overrides the file"
        elif source == "file":
            where = config_path().name
        else:
            where = "the default"
        return f"In effect: {value} (from {where})"

    def error(self) -> str | None:
        """The validation error of the edited settings, or None."""
        try:
            self.current().validate()
        except ConfigError as exc:
            return str(exc)
        return None

    @Slot()
    def _on_any_changed(self) -> None:
        if len(self.editors) < len(fields(Settings)) or not hasattr(self, "buttons"):
            return  # still building the form
        for name, label in self.effect_labels.items():
            label.setText(self.in_effect(name))
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
