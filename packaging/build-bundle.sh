#!/usr/bin/env bash
# Builds the offline install bundle: a wheelhouse with Longdoc and every dependency for each
# supported Python, the installer, the desktop entry, icon and metainfo, and INSTALL.md.
# Run on a networked machine (it needs PyPI); carry the .tar.gz to the offline workstation.
#
#   packaging/build-bundle.sh [--python 3.11,3.12,3.13] [--out DIR] [--no-tar]
#
# Python versions: 3.11, 3.12 and 3.13 (every dependency ships manylinux x86_64 wheels for
# them; PySide6 6.11.3 is abi3, so one Qt wheel serves all three).
set -euo pipefail
cd "$(dirname "$0")/.."

pythons="3.11,3.12,3.13"
out="dist/longdoc-bundle"
make_tar=1
while [ $# -gt 0 ]; do
    case "$1" in
        --python) pythons="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --no-tar) make_tar=0; shift ;;
        -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "Error: unknown option $1 (see --help)." >&2; exit 2 ;;
    esac
done

python="${PYTHON:-python3}"
[ -x .venv/bin/python ] && python=.venv/bin/python
version="$("$python" -c 'import tomllib; print(tomllib.load(open("pyproject.toml","rb"))["project"]["version"])')"
arch="$(uname -m)"

rm -rf "$out"
mkdir -p "$out/wheelhouse"
echo "Building the Longdoc wheel..." >&2
"$python" -m pip wheel -q --no-deps --no-build-isolation -w "$out/wheelhouse" . 2>/dev/null \
  || "$python" -m pip wheel -q --no-deps -w "$out/wheelhouse" .
wheel="$(ls "$out"/wheelhouse/longdoc-*.whl)"

# Wheels only (nothing to compile offline), for each Python and the manylinux tags the
# dependencies publish.
platforms=()
for tag in manylinux_2_34 manylinux_2_28 manylinux_2_17 manylinux2014 manylinux_2_5 manylinux1; do
    platforms+=(--platform "${tag}_${arch}")
done
IFS=',' read -r -a versions <<< "$pythons"
for v in "${versions[@]}"; do
    echo "Downloading dependencies for Python $v..." >&2
    "$python" -m pip download -q --dest "$out/wheelhouse" --only-binary=:all: \
        --implementation cp --python-version "$v" "${platforms[@]}" "$wheel" pip
done

cp packaging/bundle/install.sh "$out/install.sh"
cp packaging/bundle/INSTALL.md "$out/INSTALL.md"
chmod 755 "$out/install.sh"
mkdir -p "$out/share"
cp resources/longdoc.desktop resources/io.github.longdoc.Longdoc.metainfo.xml "$out/share/"
cp -r resources/icons "$out/share/icons"
printf '%s\n' "${versions[@]}" > "$out/PYTHON_VERSIONS"
echo "$version" > "$out/VERSION"
(cd "$out" && find . -type f ! -name SHA256SUMS -print0 | sort -z | xargs -0 sha256sum > SHA256SUMS)

if [ "$make_tar" = 1 ]; then
    tarball="dist/longdoc-bundle-$version-$arch.tar.gz"
    tar -C "$(dirname "$out")" -czf "$tarball" "$(basename "$out")"
    echo "Bundle: $tarball ($(du -h "$tarball" | cut -f1))" >&2
else
    echo "Bundle: $out" >&2
fi
