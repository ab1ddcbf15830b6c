"""crashlab's point protocol for Python (standard library only; docs/own-system.md).

Call point("relay.after-publish") where a crash matters. Under crashlab it appends one JSON
line to $CRASHLAB_EVENTS in one write(2), and crashes there when $CRASHLAB_CRASH_AT names
this point and hit, as $CRASHLAB_CRASH_MODE says. Elsewhere it does nothing.
"""
import json
import os
import signal
import sys
import time

_hits = {}


def _event(path, **fields):
    line = (json.dumps(fields, separators=(",", ":")) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def point(name):
    hit = _hits[name] = _hits.get(name, 0) + 1
    path = os.environ.get("CRASHLAB_EVENTS")
    if path:
        _event(path, event="point", point=name, hit=hit)
    at, _, n = os.environ.get("CRASHLAB_CRASH_AT", "").partition("@")
    if at != name or int(n or "1") != hit:
        return
    mode = os.environ.get("CRASHLAB_CRASH_MODE", "exit")
    if path:
        _event(path, event="crash", point=name, hit=hit, mode=mode)
    sys.stdout.flush()
    sys.stderr.flush()
    if mode == "abort":
        os.abort()
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "hang":
        time.sleep(3600)
    os._exit(73)
