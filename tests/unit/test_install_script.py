"""packaging/install-system-deps.sh waits for another apt instead of failing at once."""

from __future__ import annotations

import fcntl
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "packaging" / "install-system-deps.sh"


def wait_lock(lock: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "LONGDOC_DPKG_LOCKS": f"{lock} {lock.parent / 'absent'}"}
    return subprocess.Popen(
        ["bash", str(SCRIPT), "wait-lock"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.mark.timeout(60)
def test_waits_with_a_message_while_the_dpkg_lock_is_held(tmp_path: Path) -> None:
    lock = tmp_path / "lock-frontend"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX)  # as apt does
        with wait_lock(lock) as proc:
            assert proc.stderr is not None
            line = proc.stderr.readline()
            assert line.startswith(
                f"Waiting for another package manager to finish (process {os.getpid()}"
            )
            assert proc.poll() is None  # still waiting while the lock is held
            fcntl.lockf(fd, fcntl.LOCK_UN)
            _, rest = proc.communicate(timeout=30)
        assert proc.returncode == 0
        assert "going on" in rest
    finally:
        os.close(fd)


@pytest.mark.timeout(60)
def test_goes_on_at_once_when_the_lock_is_free(tmp_path: Path) -> None:
    lock = tmp_path / "lock-frontend"
    lock.touch()
    proc = wait_lock(lock)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert err == ""
