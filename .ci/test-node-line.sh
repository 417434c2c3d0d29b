#!/usr/bin/env bash
# The Node lines users run the runner on: the unit suite and the runner's own tests against the
# real daemon (every runner*.test: the runner in-process and as its bin, its control commands, its
# state files, ...; the npm package as users install it, its OpenTelemetry export), on one Node line. The build is not redone: out/ and
# dist/ are what `npm run pretest` made (in .ci/run, with the machine's Node, which runs every
# suite). The Node under test is first on PATH, so the bin's shebang (`env node`) and the npm the
# package test runs start it too. Test files are named (the shell's glob), not a directory: Node 22
# and later read a directory argument as a file (Node 20 searched it).
#
#   bash .ci/test-node-line.sh         the node on PATH (the workflows' matrix, actions/setup-node)
#   bash .ci/test-node-line.sh MAJOR   that line from the npm registry (.ci/install-node.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -gt 0 ]; then
  bash .ci/install-node.sh "$1"
  PATH="${CODEX_GOAL_RECOVERY_CACHE:-$HOME/.cache/codex-goal-recovery}/node$1/bin:$PATH"
  export PATH
  if [ "$(node -p 'process.versions.node.split(".")[0]')" != "$1" ]; then
    echo "test-node-line: node on PATH is $(node --version), not Node $1" >&2
    exit 1
  fi
fi
if [ ! -d out/test/unit ] || [ ! -f dist/cli.js ]; then
  echo "test-node-line: no build (out/, dist/cli.js): run npm run pretest first" >&2
  exit 1
fi

T0=$(date +%s)
echo "   node $(node --version) ($(command -v node))"
node --test --test-concurrency=1 out/test/unit/*.test.js \
  out/test/integration/runner*.test.js \
  out/test/integration/npmPackage.test.js \
  out/test/integration/telemetry.test.js
echo "   node $(node --version): done in $(($(date +%s) - T0))s"
