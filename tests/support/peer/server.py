"""The test peer's entry point: ``python -m tests.support.peer.server``; the code lives in
``mcpfsm._tooling.demo_server``.

It moved into the package so that ``mcpfsm demo`` can start the same server.
"""

from mcpfsm._tooling.demo_server import *  # noqa: F403
from mcpfsm._tooling.demo_server import main

if __name__ == "__main__":
    main()
