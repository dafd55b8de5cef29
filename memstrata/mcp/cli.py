"""``memstrata mcp`` and ``memstrata mcp-token``: run the MCP server, mint its tokens.

Loaded by :mod:`memstrata.cli` through the ``memstrata.cli`` entry point naming this
module's ``commands``. Every option is checked before the database is opened or the
``mcp`` SDK imported; a missing SDK answers with the extra to install
(``pip install 'memstrata[mcp]'``).

* ``memstrata mcp --user alice`` - stdio, one user per server (a desktop client
  starts it);
* ``memstrata mcp --transport http --port 8765 --tokens tokens.json`` - streamable
  HTTP at ``http://HOST:PORT/mcp``, each request acting for its bearer token's user.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from pathlib import Path

import click

from memstrata.cli import check_user_argument, url_option

__all__ = ["commands", "mcp", "mcp_token"]

DEFAULT_PORT = 8765


def _warm_up(memory: object) -> None:
    """Load the embedding model and open the indexes before the first request."""
    from memstrata.memory.manager import MemoryManager

    assert isinstance(memory, MemoryManager)
    _ = memory.longterm
    memory.embedder.embed(["warm up"])


def _stop(_signum: int, _frame: object) -> None:
    raise SystemExit(0)


def _stop_on_signals() -> None:
    """SIGTERM and SIGINT stop the server cleanly: the HTTP server finishes its requests
    (uvicorn re-raises the signal after its graceful shutdown), then the memory is closed
    (index files saved) and the process exits 0 - a default SIGTERM would kill it before."""
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, _stop)


@click.command("mcp")
@url_option
@click.option("--user", "user_id", default=None, callback=check_user_argument,
              help="stdio: the one user this server acts for.")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio",
              show_default=True,
              help="stdio (a client starts the server) or streamable HTTP (a shared server).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="http: the interface to listen on.")
@click.option("--port", type=click.IntRange(1, 65535), default=DEFAULT_PORT, show_default=True,
              help="http: the port to listen on (the endpoint is /mcp).")
@click.option("--tokens", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="http: the token file (bearer token digests -> user ids); "
                   "see `memstrata mcp-token`.")
@click.option("--public-url", default=None,
              help="http: the base URL clients reach the server at "
                   "(default: http://HOST:PORT).")
def mcp(url: str | None, user_id: str | None, transport: str, host: str, port: int,
        tokens: Path | None, public_url: str | None) -> None:
    """Serve memory over the Model Context Protocol (tools: remember, recall, observe,
    forget, history, conflicts, resolve_conflict, briefing)."""
    if transport == "stdio":
        if user_id is None:
            raise click.UsageError("stdio serves one user: give --user ID")
        if tokens is not None:
            raise click.UsageError("--tokens is for --transport http; stdio serves --user")
    else:
        if tokens is None:
            raise click.UsageError("http needs --tokens FILE (bearer token -> user); mint one "
                                   "with `memstrata mcp-token --tokens FILE --user ID`")
        if user_id is not None:
            raise click.UsageError("an http server takes each request's user from its bearer "
                                   "token; --user is for stdio")
    # the server's log (warnings: a refused session, a token file that became unusable)
    # goes to stderr one line per record; the SDK's own set-up is then a no-op
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from memstrata.mcp.server import build_server  # MissingDependencyError without the SDK
    from memstrata.mcp.tokens import TokenFile
    from memstrata.memory.manager import MemoryManager

    token_file = None
    if tokens is not None:
        token_file = TokenFile(tokens)
        if not token_file.entries:
            raise click.UsageError(f"{tokens} lists no tokens; add one with "
                                   f"`memstrata mcp-token --tokens {tokens} --user ID`")
    _stop_on_signals()
    with MemoryManager.open(url) as memory:
        _warm_up(memory)
        if token_file is None:
            build_server(memory, user_id=user_id).run("stdio")
        else:
            server = build_server(memory, tokens=token_file,
                                  public_url=public_url or f"http://{host}:{port}")
            server.run("streamable-http", host=host, port=port)


@click.command("mcp-token")
@click.option("--tokens", type=click.Path(path_type=Path, dir_okay=False), required=True,
              help="The token file to add to (created with mode 0600 when missing).")
@click.option("--user", "user_id", required=True, callback=check_user_argument,
              help="The user the token acts for.")
@click.option("--label", default=None,
              help="A name for the token (default: USER-N), shown in the server's session "
                   "owner; 1-64 letters, digits or . _ - @ :")
def mcp_token(tokens: Path, user_id: str, label: str | None) -> None:
    """Mint a bearer token for `memstrata mcp --transport http`: prints it once and stores
    only its SHA-256 digest in the token file (delete the entry to revoke it)."""
    from memstrata.mcp.tokens import add_token

    click.echo(add_token(tokens, user_id, label=label))


commands = [mcp, mcp_token]
