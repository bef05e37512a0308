"""The test peer's entry point: ``python -m tests.support.peer.server``; the code lives in ``mcpfsm._tooling.peer``.

It moved into the package so that ``mcpfsm demo`` can start the same server.
"""

from mcpfsm._tooling.peer import *  # noqa: F403
from mcpfsm._tooling.peer import main

if __name__ == "__main__":
    main()
