#!/usr/bin/env bash
# Installs Longdoc from this bundle, offline: a private virtual environment built only from
# ./wheelhouse (pip never touches the network), the `longdoc` command in ~/.local/bin, and
# the desktop entry, icon and metainfo for the user's menu.
#
#   ./install.sh [--prefix DIR] [--python PYTHON] [--bin-dir DIR] [--no-desktop]
#
# Defaults: --prefix ~/.local/share/longdoc-app, --python python3, --bin-dir ~/.local/bin.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
prefix="${XDG_DATA_HOME:-$HOME/.local/share}/longdoc-app"
python="python3"
bin_dir="$HOME/.local/bin"
desktop=1
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix="$2"; shift 2 ;;
        --python) python="$2"; shift 2 ;;
        --bin-dir) bin_dir="$2"; shift 2 ;;
        --no-desktop) desktop=0; shift ;;
        -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "Error: unknown option $1 (see --help)." >&2; exit 2 ;;
    esac
done

fail() { echo "Error: $*" >&2; exit 1; }

command -v "$python" >/dev/null || fail "$python not found: install Python 3.11 or newer (Debian/Ubuntu: python3), or pass --python /path/to/python3."
pyver="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
grep -qx "$pyver" "$here/PYTHON_VERSIONS" \
  || fail "this bundle has wheels for Python $(paste -sd, "$here/PYTHON_VERSIONS") but $python is $pyver: pass --python with one of those, or build a bundle for $pyver (packaging/build-bundle.sh --python $pyver)."
"$python" -c 'import venv, ensurepip' 2>/dev/null \
  || fail "$python cannot create virtual environments: install python3-venv (Debian/Ubuntu: carry python3-venv's .deb in with \`apt-get download python3-venv\`)."

echo "Checking the bundle's files..." >&2
(cd "$here" && sha256sum --quiet -c SHA256SUMS) || fail "the bundle is damaged (SHA256SUMS does not match): copy it again."

echo "Installing Longdoc $(cat "$here/VERSION") into $prefix ..." >&2
"$python" -m venv --clear "$prefix/venv"
PIP_NO_INDEX=1 PIP_CONFIG_FILE=/dev/null "$prefix/venv/bin/python" -m pip install -q \
    --no-index --find-links "$here/wheelhouse" --upgrade pip
PIP_NO_INDEX=1 PIP_CONFIG_FILE=/dev/null "$prefix/venv/bin/python" -m pip install -q \
    --no-index --find-links "$here/wheelhouse" longdoc
mkdir -p "$bin_dir"
ln -sf "$prefix/venv/bin/longdoc" "$bin_dir/longdoc"

if [ "$desktop" = 1 ]; then
    data="${XDG_DATA_HOME:-$HOME/.local/share}"
    mkdir -p "$data/applications" "$data/metainfo"
    sed "s|^Exec=longdoc|Exec=$prefix/venv/bin/longdoc|" "$here/share/longdoc.desktop" \
        > "$data/applications/longdoc.desktop"
    cp "$here/share/io.github.longdoc.Longdoc.metainfo.xml" "$data/metainfo/"
    (cd "$here/share/icons" && find hicolor -type f) | while read -r icon; do
        mkdir -p "$data/icons/$(dirname "$icon")"
        cp "$here/share/icons/$icon" "$data/icons/$icon"
    done
    command -v update-desktop-database >/dev/null && update-desktop-database -q "$data/applications" || true
    command -v gtk-update-icon-cache >/dev/null && gtk-update-icon-cache -q -t "$data/icons/hicolor" || true
fi

echo "Installed: $bin_dir/longdoc ($("$prefix/venv/bin/longdoc" --version))." >&2
case ":$PATH:" in *":$bin_dir:"*) ;; *) echo "Add $bin_dir to your PATH to run \`longdoc\`." >&2 ;; esac
echo "Checking this workstation (longdoc doctor):" >&2
"$prefix/venv/bin/longdoc" doctor || true
