"""The gate's I/O: the ASGI middleware, the schema book and its store, the reverse proxy's forwarding (docs/gate.md).

``mcpfsm.gate`` is the public face; this layer holds what touches a socket, a store or an event loop. The rules
it applies are pure and live in the core (``mcpfsm._core.gate``: the caps, the era, the hop-by-hop fields, the
verifier, the learning rules; ``mcpfsm._core.gate_edge``: identity and what a proxy frames itself).
One module per concept:

- :mod:`.asgi`: the ASGI plumbing (a body read under its cap, a request replayed to the app, an answer);
- :mod:`.portal`: how a store, which is trio code, is used from asyncio (a trio loop on a worker thread);
- :mod:`.book`: the learned ``tools/list`` listings, in memory and in a shared store, fetched once per TTL;
- :mod:`.listing`: reading the ``tools/list`` answers (JSON and SSE) that pass through, before passing them on;
- :mod:`.middleware`: :class:`HeaderGate`, the middleware itself, under asyncio and trio alike (anyio);
- :mod:`.forward`: the proxy's upstream: an ASGI app that forwards through mcpfsm's connection pool (trio);
- :mod:`.serve`: the proxy served by Hypercorn's trio worker (the ``gate`` extra);
- :mod:`.otel`: a span per request and two metrics, when an application configured OpenTelemetry.
"""
