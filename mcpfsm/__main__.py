"""``python -m mcpfsm``: the same as the ``mcpfsm`` command."""

import sys

from ._tooling.cli import main

if __name__ == "__main__":
    sys.exit(main())
