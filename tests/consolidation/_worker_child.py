"""Child process of the worker tests: one ``Worker`` over a database URL.

Usage: python _worker_child.py URL NOW_ISO HANG_AT_BATCH MARKER [PARTITION_LEASE]

Works until idle and exits 0. With HANG_AT_BATCH > 0, the batch of that number
(counted in this process) writes MARKER and hangs *before its commit*, so the
test can ``kill -9`` it mid-partition with a transaction open.
"""

from __future__ import annotations

import sys
import time
from datetime import datetime
from pathlib import Path

from memstrata import ManualClock, MemoryManager
from memstrata.consolidation import ConsolidationSettings, Consolidator, RunHooks, Worker


def main() -> None:
    url, now, hang_at, marker = sys.argv[1:5]
    lease = float(sys.argv[5]) if len(sys.argv) > 5 else 2.0
    seen = 0

    def before_commit(run_id: str, batch: int) -> None:
        nonlocal seen
        seen += 1
        if seen == int(hang_at):
            Path(marker).write_text(run_id)
            time.sleep(3600)

    clock = ManualClock(datetime.fromisoformat(now))
    settings = ConsolidationSettings.build(batch_users=2, partition_lease_seconds=lease)
    with MemoryManager.open(url, clock=clock) as memory:
        jobs = Consolidator(memory, settings=settings, hooks=RunHooks(before_commit=before_commit))
        report = Worker(jobs).run_until_idle()
    print(report.partitions)


if __name__ == "__main__":
    main()
