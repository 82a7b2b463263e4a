"""Start, adopt, watch, restart and stop the local inference server; GPU stats. No Qt."""

from __future__ import annotations

from server_manager.manager import (
    Connection,
    ServerManager,
    ServerStatus,
    StageCallback,
    StatusCallback,
    StatusWatcher,
    connection_for,
)
from server_manager.progress import Stage

__all__ = [
    "Connection",
    "ServerManager",
    "ServerStatus",
    "Stage",
    "StageCallback",
    "StatusCallback",
    "StatusWatcher",
    "connection_for",
]
