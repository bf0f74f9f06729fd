"""The MCP adapter: tools, resources and prompts over the official SDK, HTTP and stdio."""
