"""Tooling a library user never imports.

The ``mcpfsm`` command, diagram and walkthrough generation, trace rendering and the demo's MCP server
(which needs the ``mcp`` SDK extra).
"""
