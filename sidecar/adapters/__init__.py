"""Adapters: the two protocols over the core (JSON-RPC for the plugin, MCP for agents).

Siblings: `rpc` and `mcp` never import each other. May import serve and everything below."""
