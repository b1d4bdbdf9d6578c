#!/bin/sh
# envkit-delta.sh: what a set of installs added, changed or removed in a virtual environment, as a tree
# to copy over the environment as it was and a list of the paths to delete from it.
#
#   sh envkit-delta.sh snapshot VENV LIST
#       LIST: every path under VENV with its type, mode, size and modification time (whole seconds:
#       what an image layer keeps), one a line, sorted.
#   sh envkit-delta.sh delta VENV LIST DELTA_DIR REMOVED
#       Against LIST (taken before the installs): a path is new or changed when its type, mode, size
#       or modification time differs (rsync's quick check; times survive image layers, ctimes do not),
#       plus every file that the RECORD of a package installed since names (an installer that kept a
#       wheel's file times could leave a changed file with its old size and time). Those files go as
#       a tree under DELTA_DIR (through an archive, so a file tar cannot read fails the run), and
#       DELTA_DIR/REMOVED lists the paths the installs removed (an upgraded package's old files),
#       each as VENV/path, one a line.
#
# POSIX sh (dash on Debian bases, without pipefail): each pipeline ends in the command whose failure
# matters (sort, tar), and the lists go through files so no failure hides inside a pipe.
# Needs GNU find (-printf), realpath (-m -s --relative-to), xargs -d and tar (--verbatim-files-from).
set -eu

snapshot() {  # VENV LIST
    find "$1" -mindepth 1 -printf '%P\t%y\t%m\t%s\t%T@\n' | sed 's/\.[0-9]*$//' | LC_ALL=C sort > "$2"
}

delta() {  # VENV LIST DELTA_DIR REMOVED
    venv=$1 before=$2 out=$3 removed=$4
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    snapshot "$venv" "$work/files-after"
    mkdir -p "$out"
    cut -f1 "$before" | LC_ALL=C sort > "$work/paths-before"
    cut -f1 "$work/files-after" | LC_ALL=C sort > "$work/paths-after"
    LC_ALL=C comm -23 "$work/paths-before" "$work/paths-after" | sed "s|^|$venv/|" > "$out/$removed"
    LC_ALL=C comm -13 "$before" "$work/files-after" | awk -F '\t' '$2 != "d" {print $1}' > "$work/changed"
    # The files each new or changed RECORD names, relative to VENV; a name outside VENV (../bin of a
    # --prefix install) or one the installs did not leave as a file or link is no part of the delta.
    grep '\.dist-info/RECORD$' "$work/changed" | while IFS= read -r rec; do
        cut -d, -f1 "$venv/$rec" | sed "s|^|$venv/${rec%/*/RECORD}/|"
    done > "$work/record-names"
    xargs -r -d '\n' realpath -m -s --relative-to="$venv" < "$work/record-names" | while IFS= read -r path; do
        case "$path" in
            ../*) ;;
            *) if [ -f "$venv/$path" ] || [ -L "$venv/$path" ]; then echo "$path"; fi ;;
        esac
    done > "$work/recorded"
    LC_ALL=C sort -u "$work/changed" "$work/recorded" \
        | tar -C "$venv" --verbatim-files-from --no-unquote --no-recursion -T - -cf "$work/delta.tar"
    tar -xf "$work/delta.tar" -C "$out"
    echo "envkit: the installs add or change $(tar -tf "$work/delta.tar" | wc -l) file(s) in $venv and remove $(wc -l < "$out/$removed") path(s)"
}

case "${1:-}" in
    snapshot) [ $# -eq 3 ] || { echo "usage: $0 snapshot VENV LIST" >&2; exit 2; }; snapshot "$2" "$3" ;;
    delta) [ $# -eq 5 ] || { echo "usage: $0 delta VENV LIST DELTA_DIR REMOVED" >&2; exit 2; }; delta "$2" "$3" "$4" "$5" ;;
    *) echo "usage: $0 snapshot VENV LIST | delta VENV LIST DELTA_DIR REMOVED" >&2; exit 2 ;;
esac
