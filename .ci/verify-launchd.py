#!/usr/bin/env python3
"""The launchd agent in docs/service, read by a plist parser (Python's plistlib, as strict as
launchd about XML: a file that is not well-formed, such as one with a double hyphen inside a
comment, is refused), and the keys that make it run the runner as docs/runner.md says: its Label
(the file's name), ProgramArguments running `node ... dist/cli.js watch --json` through a shell
that expands $HOME, started at load, restarted after a failure only (KeepAlive SuccessfulExit
false). Called by .ci/verify-service.sh; exits 1 with what is wrong.

    python3 .ci/verify-launchd.py [PLIST]    default: docs/service/com.codex-goal-recovery.plist
"""
import os
import plistlib
import shlex
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = os.path.join(ROOT, "docs", "service", "com.codex-goal-recovery.plist")
LABEL = "com.codex-goal-recovery"
CLI = "$HOME/.local/lib/node_modules/codex-goal-recovery/dist/cli.js"


def problems(path: str) -> list[str]:
    try:
        with open(path, "rb") as f:
            agent = plistlib.load(f)
    except Exception as e:  # expat's ExpatError, plistlib's InvalidFileException, ...
        return [f"not a plist plistlib can read: {type(e).__name__}: {e}"]
    if not isinstance(agent, dict):
        return [f"the top level is a {type(agent).__name__}, not a dict"]
    found = []
    if agent.get("Label") != LABEL:
        found.append(f"Label is {agent.get('Label')!r}, not {LABEL!r}")
    args = agent.get("ProgramArguments")
    if not (isinstance(args, list) and len(args) == 3 and args[:2] == ["/bin/sh", "-c"]):
        found.append(f"ProgramArguments is {args!r}, not ['/bin/sh', '-c', COMMAND]")
    else:
        words = shlex.split(args[2])
        if words[:2] != ["exec", "node"]:
            found.append(f"the command does not exec node: {args[2]}")
        if CLI not in words:
            found.append(f"the command does not run {CLI}: {args[2]}")
        else:
            after = words[words.index(CLI) + 1 :]
            if after[:2] != ["watch", "--json"]:
                found.append(f"the command runs {CLI} {' '.join(after)}, not `watch --json`")
    if agent.get("RunAtLoad") is not True:
        found.append(f"RunAtLoad is {agent.get('RunAtLoad')!r}, not true")
    keep = agent.get("KeepAlive")
    if not (isinstance(keep, dict) and keep.get("SuccessfulExit") is False):
        found.append(f"KeepAlive is {keep!r}, not {{SuccessfulExit: false}} (restart after a failure only)")
    return found


def main() -> int:
    path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT
    found = problems(path)
    shown = os.path.relpath(path, ROOT) if path.startswith(ROOT) else path
    if found:
        for p in found:
            print(f"verify-launchd: {shown}: {p}", file=sys.stderr)
        return 1
    print(f"   {shown}: plistlib reads it; Label, ProgramArguments (watch --json), RunAtLoad, KeepAlive as documented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
