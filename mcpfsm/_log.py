"""The library's loguru logger, without importing loguru (docs/development.md).

mcpfsm logs through loguru and never configures it, as loguru's README says a library should: its records
are disabled (``logger.disable("mcpfsm")``), and an application calls ``logger.enable("mcpfsm")`` to see
them. Importing loguru takes about as long as importing trio, and in a process that never imports loguru no
sink can exist, so mcpfsm does not import it:

- :data:`logger` is ``loguru.logger`` as soon as loguru is imported (by anyone), and does nothing
  before. Every attribute is looked up on ``loguru.logger`` at the call, so its methods run in the
  caller's frame: records name the mcpfsm module, function and line, and
  ``logger.enable("mcpfsm._transports")`` selects modules as before.
- :func:`disable_library_logs` (run by ``import mcpfsm``) calls ``logger.disable("mcpfsm")`` at once when
  loguru is already imported. Otherwise the call is made at the library's first record after loguru's
  import, with the outcome it would have had at ``import mcpfsm``: what the application said since about
  ``"mcpfsm"`` (or a module of it, or ``""``) stands, as loguru's activation list records it.

Nothing here imports loguru; the type of :data:`logger` is loguru's own, for the type checker only.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from loguru import Logger

__all__ = ["disable_library_logs", "log_to_stdlib", "logger", "loguru_imported"]

_LIBRARY = "mcpfsm"

_pending = False
"""``import mcpfsm`` ran before loguru was imported: the library's records are disabled at the first one."""


class _LazyLogger:
    # No attributes of its own but `_nothing`: every other lookup goes through __getattr__.
    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        loguru = sys.modules.get("loguru")
        real = getattr(loguru, "logger", None)
        if real is None:
            return self._nothing
        if _pending:
            _settle(real)
        return getattr(real, name)

    def _nothing(self, *args: object, **kwargs: object) -> _LazyLogger:
        # Stands for every method before loguru exists; returning itself keeps `logger.bind(...).debug(...)` working.
        return self

    def __repr__(self) -> str:
        loguru = sys.modules.get("loguru")
        return repr(loguru.logger) if loguru is not None else "<mcpfsm logger: loguru is not imported>"


logger = cast("Logger", _LazyLogger())
"""``loguru.logger`` once loguru is imported; until then every call does nothing."""


def loguru_imported() -> bool:
    """Whether loguru is imported; before that no sink exists, and a hot path may skip building a record."""
    return "loguru" in sys.modules


def disable_library_logs() -> None:
    """``logger.disable("mcpfsm")`` now if loguru is imported, else at the library's first record; idempotent."""
    global _pending
    real = getattr(sys.modules.get("loguru"), "logger", None)
    if real is None:
        _pending = True
        return
    _pending = False
    real.disable(_LIBRARY)


def _settle(real: Logger) -> None:
    # loguru came after `import mcpfsm`, and the application may have called enable/disable since: the outcome is
    # that of disable("mcpfsm") at `import mcpfsm` followed by those calls. loguru keeps them in its activation list
    # (each name with a final dot; no public reader: without it, disable("mcpfsm") alone). `enable("")` with
    # nothing disabled leaves no entry there, so it does not count: an application enables "mcpfsm" by name.
    global _pending
    _pending = False
    activation = getattr(getattr(real, "_core", None), "activation_list", None)
    said = [(name, bool(status)) for name, status in activation or () if isinstance(name, str)]
    if any(f"{_LIBRARY}.".startswith(name) for name, _ in said):
        return  # said of the whole library, or of everything: it stands
    modules = sorted(
        ((name[:-1], status) for name, status in said if name.startswith(f"{_LIBRARY}.")),
        key=lambda entry: entry[0].count("."),
    )
    real.disable(_LIBRARY)
    for name, status in modules:  # said of a module of the library: it stands, the rest is disabled
        if status:
            real.enable(name)
        else:
            real.disable(name)


_stdlib_sink: int | None = None


def log_to_stdlib() -> int:
    """Send the library's loguru records to the standard :mod:`logging` module, and enable them.

    Most applications configure ``logging``, not loguru: after this call every mcpfsm record (an excluded tool's
    WARNING, the DEBUG audit events, ...) goes to the ``logging`` logger named after the module that logged it
    (``mcpfsm._client.catalog``, ...), at the same level (loguru's ``TRACE`` as 5, ``SUCCESS`` as 25), with the
    file, line, function and exception of the loguru record. ``logging``'s own levels and handlers then decide
    what is shown: ``logging.getLogger("mcpfsm").setLevel(logging.WARNING)`` keeps the warnings only. Other
    code's loguru records are not forwarded. Calling it again changes nothing.

    This imports loguru and enables the library's records in it (``logger.enable("mcpfsm")``). So that nothing is
    printed twice, loguru's default sink (id 0, the stderr sink loguru installs at import) is removed if it is
    still there; sinks the application added stay, and see the library's records too.

    Returns:
        The id of the loguru sink (``loguru.logger.remove(sink_id)`` stops the forwarding).
    """
    global _stdlib_sink
    import contextlib
    import logging

    from loguru import logger as loguru_logger

    loguru_logger.enable(_LIBRARY)
    if _stdlib_sink is not None:
        return _stdlib_sink
    with contextlib.suppress(ValueError):  # already removed by the application
        loguru_logger.remove(0)

    def forward(message: Any) -> None:
        record = message.record
        target = logging.getLogger(record["name"])
        level = record["level"].no
        if not target.isEnabledFor(level):
            return
        exception = record["exception"]
        exc_info = None if exception is None else (exception.type, exception.value, exception.traceback)
        target.handle(
            target.makeRecord(
                target.name,
                level,
                record["file"].path,
                record["line"],
                record["message"],
                (),
                exc_info,
                record["function"],
                {"loguru_extra": record["extra"]},
            )
        )

    _stdlib_sink = loguru_logger.add(
        forward,
        level=0,
        format="{message}",
        filter=lambda record: (record["name"] or "").partition(".")[0] == _LIBRARY,
        catch=True,
    )
    return _stdlib_sink
