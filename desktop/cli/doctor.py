"""``longdoc doctor``: check this workstation and say what to fix."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from desktop.cli.commands import add_command
from desktop.cli.options import add_setting_options
from desktop.errors import COMMON_EXIT_CODES, EXIT_DOCTOR_PROBLEMS

EXIT_CODES = (*COMMON_EXIT_CODES, EXIT_DOCTOR_PROBLEMS)

_MARK = {"ok": "ok     ", "warning": "warning", "problem": "PROBLEM"}


def register(sub: Any) -> None:
    """Add the ``doctor`` command."""
    p = add_command(sub, "doctor")
    p.add_argument(
        "--json",
        action="store_true",
        help='print {"checks": [{"name", "status": "ok|warning|problem", "detail", "fix"}]}',
    )
    # What the checks use: the profile, and a server to check instead of the managed one.
    add_setting_options(p, "profile", "endpoint", "api_key")
    p.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    """Run every check; print a checklist or JSON."""
    from desktop.cli.options import settings_from
    from desktop.doctor import Context, has_problems, iter_checks

    ctx = Context.of(settings_from(args))
    checks = []
    for check in iter_checks(ctx):
        checks.append(check)
        if not args.json:
            print(f"{_MARK[check.status]}  {check.name}: {check.detail}", flush=True)
            if check.fix:
                print(f"         fix: {check.fix}", flush=True)
    problems = sum(c.status == "problem" for c in checks)
    warnings = sum(c.status == "warning" for c in checks)
    if args.json:
        json.dump({"checks": [c.to_json() for c in checks]}, sys.stdout, indent=1)
        print()
    else:
        print(
            f"\n{problems} problem{'s' * (problems != 1)}, "
            f"{warnings} warning{'s' * (warnings != 1)}."
        )
    return EXIT_DOCTOR_PROBLEMS if has_problems(checks) else 0
