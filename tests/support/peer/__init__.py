"""A real MCP server peer (official SDK `mcp==2.3.0`) for mcpfsm's integration tests.

`tests.support.peer.server` is the server (run it with `python -m tests.support.peer.server`; the code is
`mcpfsm._tooling.demo_server`); `tests.support.peer.fixtures` starts it as a subprocess for tests. See
`tests/support/peer/README.md` for what it sends on the wire.
"""
