"""``python -m server_manager supervise ...``: the detached supervisor's entry point."""

from __future__ import annotations

import sys

from server_manager.supervisor import main

if __name__ == "__main__":
    if sys.argv[1:2] != ["supervise"]:
        sys.exit("usage: python -m server_manager supervise --home DIR --profile NAME ...")
    sys.exit(main(sys.argv[2:]))
