"""``localmem serve``: the memory as a local web page, a JSON HTTP API and MCP over HTTP, in
one process (see docs/serve.md). Needs the ``mcp`` extra (Starlette, uvicorn, the MCP SDK)."""
