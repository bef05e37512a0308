"""Helpers the tests share: servers on 127.0.0.1, worker processes, fakes at the edge, the test peer.

Nothing here is a test. Subprocess helpers run as ``python -m tests.support.<name>`` (or by path, where the child
runs isolated with ``-I -S``).
"""
