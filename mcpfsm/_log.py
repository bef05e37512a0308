"""The library's loguru logger, without importing loguru (docs/development.md).

mcpfsm logs through loguru and never configures it: ``logger.disable("mcpfsm")`` is in force, and an
application calls ``logger.enable("mcpfsm")`` to see the library's records (loguru's README, "suitable
for scripts and libraries"). Importing loguru takes about as long as importing trio, and in a process
that never imports loguru no sink can exist, so mcpfsm does not import it:

- :data:`logger` is ``loguru.logger`` as soon as loguru is imported (by anyone), and does nothing
  before. Every attribute is looked up on ``loguru.logger`` at the call, so its methods run in the
  caller's frame: records name the mcpfsm module, function and line, and
  ``logger.enable("mcpfsm._transports")`` selects modules as before.
- :func:`disable_library_logs` (run by ``import mcpfsm``) disables ``"mcpfsm"`` at once when loguru is
  already imported, and otherwise right after loguru's own import completes (a one-shot finder on
  ``sys.meta_path`` wraps loguru's loader), before the code importing loguru can call ``enable``. So
  ``disable`` and an application's ``enable`` happen in the same order as when ``import mcpfsm``
  imported loguru itself.

Nothing here imports loguru; the type of :data:`logger` is loguru's own, for the type checker only.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    # For the type checker only: importing importlib.abc at run time imports importlib.resources, a few
    # milliseconds of `import mcpfsm` (bench/startup.py); the import system needs only the methods.
    from importlib.abc import Loader
    from importlib.machinery import ModuleSpec

    from loguru import Logger

__all__ = ["disable_library_logs", "log_to_stdlib", "logger", "loguru_imported"]

_LIBRARY = "mcpfsm"


class _LazyLogger:
    # No attributes of its own but `_nothing`: every other lookup goes through __getattr__.
    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        loguru = sys.modules.get("loguru")
        real = getattr(loguru, "logger", None)
        if real is None:
            return self._nothing
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


class _DisablingLoader:
    # Runs loguru's own loader, then disables the library's records before anyone else sees the module.
    def __init__(self, loader: Loader) -> None:
        self._loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        module.logger.disable(_LIBRARY)

    def __getattr__(self, name: str) -> Any:
        # get_resource_reader, is_package, get_code, ...: whatever the wrapped loader offers.
        return getattr(self._loader, name)


class _OnLoguruImport:
    # One shot: leaves sys.meta_path at the first lookup of loguru, and finds it with the finders after it.
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != "loguru":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec: ModuleSpec | None = None
        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None)
            spec = None if find_spec is None else find_spec(fullname, path, target)
            if spec is not None:
                break
        if spec is None:
            return None
        loader = spec.loader
        if loader is not None and hasattr(loader, "exec_module"):
            spec.loader = cast("Loader", _DisablingLoader(loader))
        return spec


def disable_library_logs() -> None:
    """``logger.disable("mcpfsm")`` now if loguru is imported, else right after its import; idempotent."""
    loguru = sys.modules.get("loguru")
    if loguru is not None and hasattr(loguru, "logger"):
        loguru.logger.disable(_LIBRARY)
        return
    if not any(isinstance(finder, _OnLoguruImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _OnLoguruImport())


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
