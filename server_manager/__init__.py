"""Start, adopt, watch, restart and stop the local inference server; GPU stats. No Qt.

This package imports nothing from ``desktop`` (an import-linter contract checks it): the
app hands it plain values (a data directory, settings with ``profile`` and
``container_runtime``) and turns its typed errors into words at its own edges.
"""

from __future__ import annotations

from server_manager.errors import ServerManagerError
from server_manager.manager import (
    Connection,
    ManagerConfig,
    ManagerSettings,
    ServerManager,
    ServerStatus,
    StageCallback,
    connection_for,
)
from server_manager.progress import Stage

__all__ = [
    "Connection",
    "ManagerConfig",
    "ManagerSettings",
    "ServerManager",
    "ServerManagerError",
    "ServerStatus",
    "Stage",
    "StageCallback",
    "connection_for",
]
