"""famulus as an MCP server: the person's memory, chats and automations as MCP
tools for other agents and IDEs (``tools.py``; served at ``/mcp`` by ``api/mcp.py``)."""
