"""The state machines, as data: pure, no I/O (neither trio, httpx nor loguru: tests/client/test_layers.py).

Each machine is one module of this package that defines, under its own name in capitals, one
:class:`~mcpfsm._machines.definition.MachineDefinition` written with :func:`~mcpfsm._machines.definition.define`
(``tool_call.TOOL_CALL``, ``authorization.AUTHORIZATION``, ``input.INPUT``, ``task.TASK``, ``gate.GATE``,
``group.GROUP``), and its ``COMPILED`` table. The definition carries everything that other places would otherwise
list by hand: its walkthrough (the ``mcpfsm._tooling`` module that writes ``specs/{name}.md``) and its span name
(the telemetry layer's span of one run). :data:`~mcpfsm._machines.registry.MACHINES` is found from that naming
convention, for the tooling that draws and explains every machine (``mcpfsm diagram``) and for the property tests
that check every machine: the tool-call machine first, then the others by module name.

``MACHINES`` lives in :mod:`mcpfsm._machines.registry`, which imports every machine: only the tooling and the
tests import it. Importing one machine (the tool-call driver imports ``mcpfsm._machines.tool_call``) compiles
that machine only, and the authorization machine waits for the first ``auth=`` (bench/startup.py).

The files a new machine touches (the fourth, ``task``, touched exactly these):

1. ``mcpfsm/_machines/{name}.py`` — new: ``State`` and ``Trigger`` enums, the edges and one description per
   state, ``{NAME} = define(...)`` with its ``walkthrough`` and ``span``, and ``COMPILED``. ``MACHINES``,
   ``mcpfsm diagram`` and its drift check, and the machine property tests pick it up from the name. A machine
   whose runs outlive a cancelled caller (``task``) declares no ``cancel=``.
2. ``mcpfsm/_drivers/{name}.py`` — new: the run (its ``entered`` publishes one event per state) and one
   effect per non-terminal state, driven by ``mcpfsm._drivers.driver.drive`` (or ``start``/``advance`` for
   a run that follows facts reported from elsewhere, as ``task`` does).
3. ``mcpfsm/_core/events/{name}.py`` — new: its event, a ``CallEvent`` subclass with its own ``MACHINE`` and
   its fields; ``CallEvent.from_dict`` finds it by ``MACHINE``, importing the module of that name.
4. The client layer that starts a run (a module of ``mcpfsm/_client/``: ``task.py``), which wraps it in
   ``Telemetry.run`` when the definition names a span, and ``mcpfsm/__init__.py`` for what is public.
5. ``tooling/walkthrough_{name}.py`` — new, when the machine has a walkthrough; then ``python -m
   tooling.diagram`` writes ``specs/{name}.{mmd,dot,md}`` and ``diagrams/{name}.svg`` (``mcpfsm diagram``
   all but the ``.md``).

The fifth, ``gate``, touched these too, and besides (docs/architecture.md says why): ``drive``'s ``checkpoint=``
(its run works under asyncio too), ``mcpfsm trace``'s drawing of its runs, the manual's report of its walkthrough,
and the tests that list every machine. The sixth, ``group`` (a client group's member), has its run in
``mcpfsm/_client/members.py`` (every fact it follows is the client layer's) and events without a ``call_id``.
"""

from __future__ import annotations
