"""Child process of the crash tests: run one job and die (os._exit) at a chosen point.

Usage: python _crash_child.py URL JOB POINT BATCH NOW_ISO
POINT is ``after_batch`` (the batch committed) or ``before_commit`` (it did not).
"""

from __future__ import annotations

import os
import sys
from datetime import datetime

from memstrata import ManualClock, MemoryManager
from memstrata.consolidation import ConsolidationSettings, Consolidator, RunHooks

CRASH_EXIT = 17


def main() -> None:
    url, job, point, batch, now = sys.argv[1:6]

    def die(run_id: str, n: int) -> None:
        if n == int(batch):
            os._exit(CRASH_EXIT)

    clock = ManualClock(datetime.fromisoformat(now))
    with MemoryManager.open(url, clock=clock) as memory:
        Consolidator(memory, settings=ConsolidationSettings.build(batch_users=2),
                     hooks=RunHooks(**{point: die})).run(job)


if __name__ == "__main__":
    main()
