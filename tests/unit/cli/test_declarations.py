"""Each setting, flag, command help and folder rule is declared once, and every user of it
reads that declaration: the flags of every server command agree, folders walk one way."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from desktop.cli.commands import COMMANDS
from desktop.cli.main import build_parser
from desktop.cli.options import SERVER_OPTIONS, flag_name, settings_from
from desktop.config import SETTINGS, Settings, load_settings
from desktop.errors import ConfigError

# The commands that talk to the server (`server selftest` under `server`).
SERVER_COMMANDS = (["ask"], ["summarize"], ["review"], ["warm"], ["server", "selftest"])


def _options(words: list[str]) -> dict[str, argparse.Action]:
    parser = build_parser(words)
    for word in words:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return {opt: action for action in parser._actions for opt in action.option_strings}


@pytest.mark.parametrize("words", SERVER_COMMANDS, ids=" ".join)
def test_every_server_command_takes_the_same_server_flags(words: list[str]) -> None:
    reference = _options(["ask"])
    options = _options(words)
    for name in SERVER_OPTIONS:
        flag = flag_name(name)
        assert flag in options, (words, flag)
        mine, theirs = options[flag], reference[flag]
        assert (mine.metavar, mine.help, mine.default) == (theirs.metavar, theirs.help, None)
        assert (mine.type is None) == (theirs.type is None)
        if mine.type is not None:
            assert mine.type("4096") == 4096  # type: ignore[operator]
            with pytest.raises(argparse.ArgumentTypeError, match="between 1 and 1,048,576"):
                mine.type("0")  # type: ignore[operator]


def test_a_flag_help_names_its_variable_and_what_empty_means() -> None:
    help_text = _options(["ask"])["--context-length"].help or ""
    assert "LONGDOC_CONTEXT_LENGTH" in help_text and "as the server reports" in help_text


def test_flags_apply_over_the_environment(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LONGDOC_CONTEXT_LENGTH", "32_768")
    assert load_settings().context_length == 32_768
    args = build_parser(["ask"]).parse_args(["ask", "x.pdf", "q", "--context-length", "8192"])
    assert settings_from(args).context_length == 8192
    monkeypatch.setenv("LONGDOC_CONTEXT_LENGTH", "lots")
    with pytest.raises(
        ConfigError, match="LONGDOC_CONTEXT_LENGTH='lots' is not a number of tokens"
    ):
        load_settings()


def test_every_setting_is_declared_with_its_words_and_bounds() -> None:
    assert list(SETTINGS) == list(Settings.__dataclass_fields__)
    for name, spec in SETTINGS.items():
        assert spec.label, name
        assert isinstance(getattr(Settings(), name), spec.kind)
        if spec.kind is int:
            assert spec.minimum is not None and spec.maximum is not None, name
            with pytest.raises(ConfigError, match=name):
                spec.validate(name, spec.maximum + 1)
    Settings(context_length=0).validate()  # 0: as the server reports
    with pytest.raises(ConfigError, match="0 = as the server reports"):
        Settings(context_length=-1).validate()


def test_each_command_help_is_written_once() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    listed = {action.dest: action.help for action in sub._choices_actions}
    for command in COMMANDS:
        assert listed[command.name] == command.help
        described = sub.choices[command.name].description or ""
        assert described, command.name


def test_ingest_and_batches_walk_folders_by_one_rule(tmp_path: Path) -> None:
    from desktop.batch import collect
    from desktop.library import expand_paths

    (tmp_path / "sub").mkdir()
    (tmp_path / ".git").mkdir()
    for name in ("a.txt", "sub/b.md", "notes.xyz", ".hidden.txt", ".git/c.txt", "sub/.d.md"):
        (tmp_path / name).write_text("text\n")
    os.mkfifo(tmp_path / "pipe.txt")
    walked = [p.relative_to(tmp_path).as_posix() for p in collect([tmp_path])]
    assert walked == ["a.txt", "notes.xyz", "pipe.txt", "sub/b.md"]
    documents = [p.relative_to(tmp_path).as_posix() for p in expand_paths([tmp_path])]
    assert documents == ["a.txt", "pipe.txt", "sub/b.md"]
    # A file named on its own is kept, whatever it is: the caller says why it is refused.
    assert expand_paths([tmp_path / ".hidden.txt"]) == [tmp_path / ".hidden.txt"]
