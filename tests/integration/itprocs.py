"""Waiting on processes for the scenario tests (ittest.py): a condition, and a process's state as
/proc shows it."""

import time


def wait_for(predicate, timeout=10.0, interval=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return predicate()


def process_state(pid):
    """The one-letter state of pid from /proc (R, S, T, t, Z, ...), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text[text.rindex(")") + 2]


def alive(pid):
    state = process_state(pid)
    return state is not None and state not in ("Z", "X")
