#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages Longdoc needs, only those missing.
#   run:  Qt's runtime libraries (X11/xcb, EGL, fonts) and python3-venv
#   test: additionally podman + runc (server-manager tests against a real container
#         runtime), Xvfb (screenshots on a virtual screen), desktop-file-utils and
#         appstream (validating the desktop entry and metainfo)
set -euo pipefail
what="${1:-run}"

packages=(python3-venv libegl1 libgl1 libxkbcommon0 libxkbcommon-x11-0 libfontconfig1
          libdbus-1-3 libglib2.0-0 libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1
          libxcb-shape0 libxcb-randr0 libxcb-render-util0 libxcb-image0 fonts-dejavu-core)
if [ "$what" = test ]; then
    packages+=(podman runc uidmap xvfb desktop-file-utils appstream)
fi

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null; then
    echo "Please install: ${missing[*]} (no apt-get found on this system)" >&2
    exit 1
fi
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "Installing system packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# The package lists may be stale or empty on a fresh machine; refresh once on failure.
$sudo apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null \
  || { $sudo apt-get update -qq && $sudo apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
