"""``memstrata mcp``: memstrata as a Model Context Protocol server (official ``mcp`` SDK).

* :func:`memstrata.mcp.server.build_server` - an ``MCPServer`` over a
  :class:`~memstrata.memory.manager.MemoryManager`, for one user (stdio) or for the
  users of a token file (streamable HTTP); run it, or mount its
  ``streamable_http_app()`` in your own ASGI app;
* :mod:`memstrata.mcp.tokens` - the token file (SHA-256 digests -> user ids);
* :mod:`memstrata.mcp.cli` - the ``memstrata mcp`` and ``memstrata mcp-token`` commands.

This package imports nothing heavy: the SDK loads when a server is built (without it,
:class:`~memstrata.errors.MissingDependencyError` names the extra,
``pip install 'memstrata[mcp]'``). See ``docs/mcp.md``.
"""

__all__: list[str] = []
