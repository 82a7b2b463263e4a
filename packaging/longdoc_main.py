"""Entry point of the one-folder build (PyInstaller): the same ``longdoc`` command."""

import sys

from desktop.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
