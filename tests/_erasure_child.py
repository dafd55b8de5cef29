"""Child process of tests/test_erasure_processes.py: another process on the same memory.

Usage::

    python _erasure_child.py forget URL INDEX_DIR USER
    python _erasure_child.py forget-then-hang URL INDEX_DIR USER SIGNAL_FILE
    python _erasure_child.py recall URL INDEX_DIR USER NOW_ISO QUERY...

``INDEX_DIR`` is ``-`` for the default (beside a SQLite file). ``forget`` prints
the counts of ``forget_user`` as JSON; ``forget-then-hang`` commits the erasure
and stops before the index files are deleted, writes ``SIGNAL_FILE`` and waits
for the parent's SIGKILL; ``recall`` prints the hits (id, score, dense, keyword)
as JSON, read-only, at the given time.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from memstrata import ManualClock, MemoryManager


def _open(url: str, index_dir: str, **kwargs: Any) -> MemoryManager:
    if index_dir != "-":
        kwargs["index_dir"] = Path(index_dir)
    return MemoryManager.open(url, **kwargs)


def _forget(url: str, index_dir: str, user: str) -> None:
    with _open(url, index_dir) as memory:
        print(json.dumps(memory.forget_user(user)))


def _forget_then_hang(url: str, index_dir: str, user: str, signal_file: str) -> None:
    memory = _open(url, index_dir)  # opening finished any earlier pending cleanup

    def stop_here(keys: list[str] | None = None) -> None:
        # Fault injection at a named seam: forget_user calls _finish_erasures right
        # after the erasing transaction committed and before any file is deleted.
        # Replacing it on this instance only makes the process stop exactly there;
        # the parent then SIGKILLs it - a real crash between commit and cleanup.
        tmp = Path(signal_file + ".tmp")
        tmp.write_text(json.dumps(keys))
        os.replace(tmp, signal_file)  # the parent never reads a half-written file
        while True:
            time.sleep(1)

    memory._finish_erasures = stop_here  # type: ignore[method-assign]
    memory.forget_user(user)
    raise SystemExit("forget_user returned: the seam was not reached")


def _recall(url: str, index_dir: str, user: str, now: str, queries: list[str]) -> None:
    clock = ManualClock(datetime.fromisoformat(now))
    with _open(url, index_dir, clock=clock) as memory:
        out = {
            query: [
                {"id": h.id, "score": h.score, "dense": h.dense, "keyword": h.keyword}
                for h in memory.recall(user, query, record_use=False)
            ]
            for query in queries
        }
    print(json.dumps(out))


def main() -> None:
    command, url, index_dir, user, *rest = sys.argv[1:]
    if command == "forget":
        _forget(url, index_dir, user)
    elif command == "forget-then-hang":
        _forget_then_hang(url, index_dir, user, rest[0])
    elif command == "recall":
        _recall(url, index_dir, user, rest[0], rest[1:])
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main()
