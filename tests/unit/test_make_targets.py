"""`make run` makes `longdoc` typeable; `make fake-server` sets up only what that server needs.

The Makefile runs for real against a stand-in virtualenv (a ``longdoc`` that only prints),
with a private HOME and PATH: nothing of the user's is touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINK_SCRIPT = ROOT / "packaging" / "link-command.sh"

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def stand_in_venv(tmp_path: Path) -> Path:
    """A virtualenv the Makefile finds up to date, whose ``longdoc`` only says it ran."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    for name, text in (("python", "exit 0"), ("longdoc", 'echo "longdoc ran $*"')):
        program = venv / "bin" / name
        program.write_text(f"#!/bin/sh\n{text}\n")
        program.chmod(0o755)
    marker = venv / ".run-installed"
    marker.touch()
    later = (ROOT / "pyproject.toml").stat().st_mtime + 10
    for path in (venv / "bin" / "python", marker):
        os.utime(path, (later, later))
    return venv


def run(args: list[str], home: Path, path: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    env.update(HOME=str(home), PATH=path)
    return subprocess.run(
        args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def link(target: str, home: Path, path: str) -> subprocess.CompletedProcess[str]:
    """The link script alone, with no terminal to ask on (it must never ask)."""
    return subprocess.run(
        ["bash", str(LINK_SCRIPT), target],
        env={"HOME": str(home), "PATH": path},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def system_path() -> str:
    return os.pathsep.join(p for p in ("/usr/local/bin", "/usr/bin", "/bin") if Path(p).is_dir())


def test_make_run_links_longdoc_when_local_bin_is_on_the_path(tmp_path: Path) -> None:
    venv = stand_in_venv(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    path = f"{home}/.local/bin:{system_path()}"
    first = run(["make", "--no-print-directory", "run", f"VENV={venv}"], home, path)
    assert first.returncode == 0, first.stderr
    link = home / ".local" / "bin" / "longdoc"
    assert link.is_symlink() and os.readlink(link) == str(venv / "bin" / "longdoc")
    assert f"Linked {link} to {venv / 'bin' / 'longdoc'}" in first.stderr
    assert "longdoc ran" in first.stdout  # and the app opened
    # The user can now type `longdoc`.
    typed = run(["sh", "-c", "longdoc --version"], home, path)
    assert typed.stdout.strip() == "longdoc ran --version"
    # Once linked, later runs say nothing about it.
    again = run(["make", "--no-print-directory", "run", f"VENV={venv}"], home, path)
    assert again.returncode == 0 and "Linked" not in again.stderr and "link" not in again.stderr


def test_make_run_prints_the_path_when_local_bin_is_not_on_the_path(tmp_path: Path) -> None:
    venv = stand_in_venv(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    result = run(["make", "--no-print-directory", "run", f"VENV={venv}"], home, system_path())
    assert result.returncode == 0, result.stderr
    assert f"longdoc is {venv / 'bin' / 'longdoc'}" in result.stderr
    assert "not on your PATH" in result.stderr
    assert not (home / ".local").exists()


def test_an_existing_file_is_never_replaced_and_nothing_is_asked(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    mine = home / ".local" / "bin" / "longdoc"
    mine.write_text("#!/bin/sh\necho mine\n")
    path = f"{home}/.local/bin/:{system_path()}"  # a trailing slash is the same folder
    target = str(tmp_path / "venv" / "bin" / "longdoc")
    kept = link(target, home, path)
    assert kept.returncode == 0
    assert not mine.is_symlink() and mine.read_text() == "#!/bin/sh\necho mine\n"
    assert "left alone" in kept.stderr and target in kept.stderr
    # A link to another checkout is replaced by one to this checkout.
    mine.unlink()
    mine.symlink_to(tmp_path / "old-checkout" / "longdoc")
    moved = link(target, home, path)
    assert moved.returncode == 0 and os.readlink(mine) == target


def test_make_fake_server_needs_no_test_setup(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh-venv"
    plan = run(
        ["make", "-n", "--no-print-directory", "fake-server", f"VENV={fresh}"],
        tmp_path,
        system_path(),
    )
    assert plan.returncode == 0, plan.stderr
    assert "pip install -q -e ." in plan.stdout
    assert ".[test]" not in plan.stdout and "install-system-deps.sh test" not in plan.stdout
    assert "-m tests.support.sglang_server" in plan.stdout
    # Set up already: it only starts the server.
    ready = run(
        ["make", "-n", "--no-print-directory", "fake-server", f"VENV={stand_in_venv(tmp_path)}"],
        tmp_path,
        system_path(),
    )
    assert [line for line in ready.stdout.splitlines() if "pip" in line] == []
