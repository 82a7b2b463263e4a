#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages Longdoc needs, only those missing.
#   run:  Qt's runtime libraries (X11/xcb, EGL, fonts) and python3-venv
#   test: additionally podman + runc and docker.io (server-manager tests against real
#         container runtimes; the docker tests start their own dockerd), Xvfb, openbox and
#         xprop (GUI tests and screenshots on a real X display, with and without a window
#         manager), desktop-file-utils and appstream (validating the desktop entry and
#         metainfo), poppler-utils (pdftotext, the independent extractor the PDF
#         word-spacing test compares with)
#   wait-lock: only wait until no other apt/dpkg holds the package lock (used by tests)
set -euo pipefail
what="${1:-run}"

# dpkg's lock files; LONGDOC_DPKG_LOCKS replaces them in tests.
read -r -a dpkg_locks <<< "${LONGDOC_DPKG_LOCKS:-/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock}"

# The pid of a process holding one of the locks (apt takes fcntl locks, listed with the
# file's inode in /proc/locks: readable without root, unlike the lock files themselves).
lock_holder() {
    local lock inode
    for lock in "${dpkg_locks[@]}"; do
        [ -e "$lock" ] || continue
        inode=$(stat -c %i "$lock")
        awk -v inode="$inode" '$2 != "->" { n = split($6, id, ":"); if (id[n] == inode) { print $5; exit } }' /proc/locks
    done | head -n 1
}

# Another apt (unattended-upgrades on a fresh machine, a second terminal) must finish
# first: say so and wait, instead of failing at once with "Could not get lock".
wait_for_dpkg_lock() {
    local pid said=""
    [ -r /proc/locks ] || return 0
    while pid=$(lock_holder) && [ -n "$pid" ]; do
        if [ -z "$said" ]; then
            echo "Waiting for another package manager to finish (process $pid:" \
                 "$(ps -o comm= -p "$pid" 2>/dev/null || echo unknown)); Ctrl-C to stop..." >&2
            said=1
        fi
        sleep 2
    done
    [ -z "$said" ] || echo "The package manager is free; going on." >&2
}

if [ "$what" = wait-lock ]; then
    wait_for_dpkg_lock
    exit 0
fi

packages=(python3-venv libegl1 libgl1 libxkbcommon0 libxkbcommon-x11-0 libfontconfig1
          libdbus-1-3 libglib2.0-0 libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1
          libxcb-shape0 libxcb-randr0 libxcb-render-util0 libxcb-image0 fonts-dejavu-core)
if [ "$what" = test ]; then
    packages+=(podman runc uidmap docker.io xvfb openbox x11-utils desktop-file-utils appstream
               poppler-utils)
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
wait_for_dpkg_lock
# apt itself also waits for the lock (up to 20 min) should another one take it meanwhile.
apt=($sudo apt-get -o DPkg::Lock::Timeout=1200)
# The package lists may be stale or empty on a fresh machine; refresh once on failure.
"${apt[@]}" install -y --no-install-recommends "${missing[@]}" >/dev/null \
  || { "${apt[@]}" update -qq && "${apt[@]}" install -y --no-install-recommends "${missing[@]}" >/dev/null; }
