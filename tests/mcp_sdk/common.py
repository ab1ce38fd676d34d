"""What the official-SDK scripts share: a failed check and finding it behind the SDK's task
groups. Each script is run as `python tests/mcp_sdk/<script>.py`, so this file is importable."""

from __future__ import annotations


class Failure(Exception):
    """A check that did not hold."""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise Failure(message)


def find_failure(error: BaseException) -> Failure | None:
    """The `Failure` behind `error`, also when the SDK's task groups wrapped it in a group."""
    if isinstance(error, Failure):
        return error
    for inner in getattr(error, "exceptions", ()):
        found = find_failure(inner)
        if found is not None:
            return found
    return None
