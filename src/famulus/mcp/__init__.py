"""MCP: the servers the person registered, whose tools become agent tools (the client side)."""
