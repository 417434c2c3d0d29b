#!/usr/bin/env bash
# The service files in docs/service. The systemd user unit is checked by systemd itself:
# `systemd-analyze --user verify` (Debian's systemd package, installed here if missing). Any line
# it prints is a problem it found (it exits 0 on many of them), so any output fails. The launchd
# agent (macOS) is read by a plist parser, with its keys checked: .ci/verify-launchd.py (python3).
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
missing=()
command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if [ ${#missing[@]} -gt 0 ]; then
  echo "   installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
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
python3 .ci/verify-launchd.py
