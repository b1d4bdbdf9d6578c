#!/usr/bin/env bash
# Refresh the vendored schemas from their upstream repositories at a given commit.
#
#   bash schemas/update.sh compose  <compose-spec commit>
#   bash schemas/update.sh devcontainer <devcontainers/spec commit>
#
# Needs network access to raw.githubusercontent.com (the project's test machines have none:
# run it on a workstation, then commit the result with the new commit in schemas/README.md).
# After updating, run `pytest tests/generate/test_schemas.py tests/clients` and read the diff.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

usage() { echo "usage: $0 compose|devcontainer <commit>" >&2; exit 2; }
[ $# -eq 2 ] || usage
which="$1" commit="$2"
case "$commit" in *[!0-9a-f]*|'') echo "commit must be hex: $commit" >&2; exit 2 ;; esac

case "$which" in
  compose)
    url="https://raw.githubusercontent.com/compose-spec/compose-spec/${commit}/schema/compose-spec.json"
    out="compose-spec.json" ;;
  devcontainer)
    url="https://raw.githubusercontent.com/devcontainers/spec/${commit}/schemas/devContainer.base.schema.json"
    out="devContainer.base.schema.json" ;;
  *) usage ;;
esac

tmp="$(mktemp)"
trap 'rm -f "$tmp"' EXIT
curl -fsSL "$url" -o "$tmp"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp"  # refuse a non-JSON answer
mv "$tmp" "$out"
trap - EXIT
echo "updated schemas/$out from $url"
echo "now record the commit ($commit) and today's date in schemas/README.md"
