"""``python -m tooling.authserver``: run the test authorization server (see the package docstring)."""

from . import main

main()
