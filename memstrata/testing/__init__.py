"""Test support shipped with memstrata (used by its own tests and by users' tests).

* :class:`PostgresServer` - a throwaway PostgreSQL cluster from the installed binaries;
* :class:`OpenAICompatServer` / :class:`Reply` - a real HTTP server on 127.0.0.1
  speaking the OpenAI wire format, with scripted replies.
"""

from memstrata.testing.openai_server import OpenAICompatServer, Reply
from memstrata.testing.postgres import PostgresServer, find_pg_bin

__all__ = ["OpenAICompatServer", "PostgresServer", "Reply", "find_pg_bin"]
