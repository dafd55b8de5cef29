"""Test support shipped with memstrata (used by its own tests and by users' tests).

* :class:`PostgresServer` - a throwaway PostgreSQL cluster from the installed binaries.
"""

from memstrata.testing.postgres import PostgresServer, find_pg_bin

__all__ = ["PostgresServer", "find_pg_bin"]
