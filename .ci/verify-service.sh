#!/usr/bin/env bash
# The systemd user unit in docs/service is checked by systemd itself: `systemd-analyze --user
# verify` (Debian's systemd package, installed here if missing). Any line it prints is a problem
# it found (it exits 0 on many of them), so any output fails.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "   installing: systemd"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq systemd >/dev/null
fi
runtime="$(mktemp -d)"
trap 'rm -rf "$runtime"' EXIT
unit=docs/service/codex-goal-recovery.service
set +e
said="$(XDG_RUNTIME_DIR="$runtime" systemd-analyze --user verify "$unit" 2>&1)"
code=$?
set -e
if [ "$code" -ne 0 ] || [ -n "$said" ]; then
  echo "verify-service: systemd-analyze --user verify $unit (exit $code):" >&2
  echo "$said" >&2
  exit 1
fi
echo "   $unit: systemd-analyze --user verify found nothing"
