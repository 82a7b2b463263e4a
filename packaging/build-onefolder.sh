#!/usr/bin/env bash
# Builds a one-folder Longdoc (PyInstaller) that starts without a system Python:
#   packaging/build-onefolder.sh [--out DIR]      (default dist/longdoc-onefolder)
# The result, DIR/longdoc/, is copied to the workstation as a whole; run DIR/longdoc/longdoc.
# Needs the project's virtualenv (`make test` sets it up) and PyInstaller (installed into it
# from PyPI if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
out="dist/longdoc-onefolder"
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out="$2"; shift 2 ;;
        -h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "Error: unknown option $1 (see --help)." >&2; exit 2 ;;
    esac
done
python=.venv/bin/python
[ -x "$python" ] || { echo "Error: no .venv here: run \`make test\` (or make run) first." >&2; exit 1; }
"$python" -c 'import PyInstaller' 2>/dev/null || "$python" -m pip install -q "pyinstaller>=6.10,<7"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$python" -m PyInstaller --noconfirm --log-level WARN --distpath "$out" --workpath "$work" \
    packaging/longdoc.spec
echo "One-folder build: $out/longdoc/longdoc ($(du -sh "$out/longdoc" | cut -f1))" >&2
