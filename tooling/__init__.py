"""Test oracles and generators that run from a checkout and never ship in the wheel (docs/development.md).

``python -m tooling.authserver`` (the local authorization server with its logs and reuse counters),
``tooling.peer_tasks`` and ``tooling.peer_skills`` (the tasks and skills servers of the tests),
``tooling.processes`` (runs them as subprocesses), the walkthroughs ``tooling.walkthrough*`` and
``python -m tooling.diagram`` (every generated file in ``specs/`` and ``diagrams/``, walkthroughs included), and
``tooling.recorded`` (the manual's reports, from the walkthroughs' recorded runs). They import ``mcpfsm``; nothing
in ``mcpfsm`` imports them.
"""
