"""``memstrata mcp``: memstrata as a Model Context Protocol server (official ``mcp`` SDK)."""
