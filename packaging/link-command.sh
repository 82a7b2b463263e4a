#!/usr/bin/env bash
# Make `longdoc` a command the user can type after `make run`, never asking anything.
#
#   link-command.sh /abs/path/to/.venv/bin/longdoc
#
# When ~/.local/bin is on the PATH, ~/.local/bin/longdoc becomes a symbolic link to the
# given program (a link that points elsewhere, e.g. an older checkout, is replaced; a file
# that is not a link is left alone). Otherwise it prints the path to use. Silent when the
# link is already right, so `make run` says it once.
set -euo pipefail

target="$1"
bin_dir="$HOME/.local/bin"
link="$bin_dir/longdoc"

on_path=no
IFS=: read -r -a path_dirs <<<"${PATH:-}"
for dir in "${path_dirs[@]}"; do
    if [ "${dir%/}" = "$bin_dir" ]; then
        on_path=yes
    fi
done

if [ "$on_path" != yes ]; then
    echo "longdoc is $target (~/.local/bin is not on your PATH: add it, or use that path)." >&2
    exit 0
fi
if [ -L "$link" ]; then
    if [ "$(readlink "$link")" = "$target" ]; then
        exit 0
    fi
    ln -sfn "$target" "$link"
    echo "$link now points to $target: type \`longdoc\`." >&2
elif [ -e "$link" ]; then
    echo "$link exists and is not a link, so it was left alone; this checkout's longdoc is $target." >&2
else
    mkdir -p "$bin_dir"
    ln -s "$target" "$link"
    echo "Linked $link to $target: type \`longdoc\` from now on." >&2
fi
