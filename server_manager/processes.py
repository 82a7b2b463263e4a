"""Process identity: a pid is only the process we started if its start time and argv agree.

A pid in ``state.json`` outlives its process: after a reboot or an OOM-killed supervisor
the same number can belong to a stranger, which must never be signalled. So every pid the
server manager records comes with the boot, the start time (``/proc/PID/stat`` field 22,
clock ticks since boot) and the command line; a signal goes only to a process that still
matches all three, and a mismatch means "gone".
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import time
from dataclasses import asdict, dataclass
from typing import Any

POLL_S = 0.1


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _stat_fields(pid: int) -> list[str] | None:
    """``/proc/PID/stat`` after the command name (which may hold spaces and parentheses)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _cmdline_digest(pid: int) -> str | None:
    # A digest, not the argv itself: state.json need not repeat a command line. Empty reads
    # (a process in the middle of exec, or exiting) prove nothing: None.
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmdline = fh.read()
    except OSError:
        return None
    return hashlib.sha256(cmdline).hexdigest() if cmdline else None


@dataclass(frozen=True)
class ProcessIdentity:
    """Who a pid was when it was recorded."""

    pid: int
    start_ticks: int
    boot_id: str
    cmdline_sha256: str

    def to_json(self) -> dict[str, Any]:
        """Plain dict for state.json."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> ProcessIdentity | None:
        """The identity stored in state.json, or None when absent or malformed."""
        if not isinstance(data, dict):
            return None
        try:
            identity = cls(
                pid=int(data["pid"]),
                start_ticks=int(data["start_ticks"]),
                boot_id=str(data["boot_id"]),
                cmdline_sha256=str(data["cmdline_sha256"]),
            )
        except (KeyError, TypeError, ValueError):
            return None
        return identity if identity.pid > 0 else None

    def alive(self) -> bool:
        """True only while the very process recorded runs (not a zombie, not a newcomer)."""
        current = identify(self.pid)
        return current is not None and current == self

    def signal(self, signum: int, group: bool = False) -> bool:
        """Send ``signum`` (to its process group with ``group``) if it is still this process.

        Returns False, sending nothing, when the pid now names someone else or nobody.
        """
        if not self.alive():
            return False
        try:
            if group:
                # The engine leads its own group (start_new_session); only then is the
                # group ours as well.
                if os.getpgid(self.pid) != self.pid:
                    os.kill(self.pid, signum)
                else:
                    os.killpg(self.pid, signum)
            else:
                os.kill(self.pid, signum)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def exists(self) -> bool:
        """True while this process (same pid and start time) is not yet a zombie.

        Unlike ``alive`` it ignores the command line, which reads empty while an exiting
        process tears down its memory: such a process is not signalled, but waited for.
        """
        fields = _stat_fields(self.pid)
        if fields is None or len(fields) < 20 or fields[0] in ("Z", "X"):
            return False
        return fields[19] == str(self.start_ticks) and _boot_id() == self.boot_id

    def wait_gone(self, timeout_s: float) -> bool:
        """Wait until this process has ended; False if it still runs after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while self.exists():
            if time.monotonic() > deadline:
                return False
            time.sleep(POLL_S)
        return True

    def terminate(self, grace_s: float, group: bool = False) -> bool:
        """SIGTERM, then SIGKILL after ``grace_s``; True if it was (still) this process."""
        if not self.signal(signal.SIGTERM, group):
            return False
        if not self.wait_gone(grace_s):
            self.signal(signal.SIGKILL, group)
            self.wait_gone(10.0)
        return True


def identify_started(pid: int, timeout_s: float = 5.0) -> ProcessIdentity | None:
    """The identity of a child just started: waits for its command line to be readable.

    ``Popen`` returns once exec has begun, when the kernel may not yet have set the new
    program's argv, so an immediate read can come back empty.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        identity = identify(pid)
        if identity is not None or time.monotonic() > deadline or _stat_fields(pid) is None:
            return identity
        time.sleep(0.01)


def identify(pid: int) -> ProcessIdentity | None:
    """The identity of the live process ``pid`` now, or None (no such process, or a zombie)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return None
    fields = _stat_fields(pid)
    # fields[0] is the state (field 3); field 22, starttime, is fields[19].
    if fields is None or len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    cmdline = _cmdline_digest(pid)
    if cmdline is None:
        return None
    with contextlib.suppress(ValueError):
        return ProcessIdentity(pid, int(fields[19]), _boot_id(), cmdline)
    return None
