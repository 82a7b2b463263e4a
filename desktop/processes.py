"""Process liveness, shared by the store (orphaned answers) and the server manager."""

from __future__ import annotations

import os


def pid_alive(pid: object) -> bool:
    """True when a process with this pid exists and is not a zombie; False for no pid."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, it is just someone else's
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True  # no /proc (not Linux): kill(0) said it exists
