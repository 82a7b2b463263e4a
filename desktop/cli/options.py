"""Flags declared once: each setting's flag comes from its declaration in ``desktop.config``.

``add_server_options`` gives every command that talks to the server the same
``--endpoint``, ``--model``, ``--api-key`` and ``--context-length`` (same names, types, bounds
and help); ``settings_from`` applies whatever of them a command was given.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from desktop.config import MAX_TOKENS, SETTINGS, Settings, load_settings, with_overrides

# The settings every command that talks to the server takes as flags.
SERVER_OPTIONS = ("endpoint", "model", "api_key", "context_length")


def bounded_int(minimum: int, maximum: int) -> Callable[[str], int]:
    """An argparse type: a whole number from ``minimum`` to ``maximum``."""

    def parse(text: str) -> int:
        try:
            value = int(text.replace("_", "").replace(",", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(
                f"{value:,} is not between {minimum:,} and {maximum:,}"
            )
        return value

    return parse


# A number of tokens a flag may name (--max-tokens, --context-length).
token_count = bounded_int(1, MAX_TOKENS)


def flag_name(name: str) -> str:
    """The flag of setting ``name``: ``context_length`` -> ``--context-length``."""
    return "--" + name.replace("_", "-")


def add_setting_options(parser: argparse.ArgumentParser, *names: str) -> None:
    """Add the flags of the named settings, worded and typed from their declarations."""
    for name in names:
        spec = SETTINGS[name]
        default = spec.empty or f"{spec.default}"
        sources = f"{spec.env}, {name} in longdoc.toml" if spec.env else f"{name} in longdoc.toml"
        extra: dict[str, Any] = {}
        if spec.kind is int:
            low = spec.minimum if spec.minimum is not None else 0
            extra["type"] = bounded_int(low, spec.maximum or MAX_TOKENS)
        if name == "profile":
            from server_manager.profiles import available_profiles

            default += f"; bundled: {', '.join(available_profiles(None))}"
        parser.add_argument(
            flag_name(name),
            metavar=spec.flag or "VALUE",
            default=None,
            help=f"{spec.help} (default: {sources}, else {default})",
            **extra,
        )


def add_server_options(parser: argparse.ArgumentParser) -> None:
    """``--endpoint``, ``--model``, ``--api-key``, ``--context-length``: the server to ask."""
    add_setting_options(parser, *SERVER_OPTIONS)


def settings_from(args: argparse.Namespace, **overrides: Any) -> Settings:
    """Settings with the command's setting flags applied (flags win over env and file)."""
    given = {name: getattr(args, name, None) for name, spec in SETTINGS.items() if spec.flag}
    return with_overrides(load_settings(), **{**given, **overrides})
