"""``python -m tests.support.sglang_server``."""

import sys

from tests.support.sglang_server.cli import main

sys.exit(main())
