"""What a client does, as one value: :class:`ClientOptions`, every behaviour option once, checked once.

``Client(transport, ...)``, ``Client.http(url, ...)``, ``Client.stdio(command, ...)`` and ``ClientGroup(config, ...)``
take these options as keywords (typed by :class:`ClientKeywords`) or as one value (``options=``); either way they
make one :class:`ClientOptions`, and the client's assembly (``mcpfsm._client.assembly``) hands each part the
options it uses. The factories keep the keywords of their own connection (``url``, ``headers``, ``auth``, ...;
``command``, ``env``, ``cwd``).

A new option is one field here (with its docstring, and its check in :meth:`ClientOptions.__post_init__` when it
needs one), its line in :class:`ClientKeywords` (``tests/client/test_options.py`` holds the two together), and
its use in the part that reads it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypedDict, Union, get_args

from .._core.constants import SPOKEN_VERSIONS
from .._core.input import ELICITATION_MODES
from .._drivers.input import DEFAULT_MAX_INPUT_ROUNDS, InputHandler

if TYPE_CHECKING:
    from .._core.credentials import ClientCredentials, EnterpriseManaged, JwtBearer, OAuth, Store
    from .._core.events import CallEvent
    from .._core.output import ValidateOutput

__all__ = ["Auth", "ClientKeywords", "ClientOptions", "EventSink", "LogLevel", "NotificationCallback", "Protocol"]

Protocol = Literal["auto", "2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]
"""What ``protocol=`` accepts: ``"auto"`` probes; a version pins it."""

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
"""What ``log_level=`` accepts: the syslog severities of MCP "Logging", least severe first."""

# The credential classes come with the first auth= (bench/startup.py): named here, resolved by the type checker.
Auth: TypeAlias = Union["OAuth", "ClientCredentials", "JwtBearer", "EnterpriseManaged", str]
"""What ``auth=`` of ``Client.http`` accepts: credentials that run authorization flows, or a static bearer token."""

EventSink = Callable[["CallEvent"], object]
"""An ``on_event`` callback: called with every audit event, synchronously."""

NotificationCallback = Callable[[str, dict[str, Any]], object]
"""An ``on_notification`` callback: ``(method, params)``, may return an awaitable."""

_VALIDATE_OUTPUT = ("raise", "warn", "off")
_HANDLERS = ("on_elicitation", "on_sampling", "on_roots")


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientOptions:
    """Every option that says how a client behaves, whatever it is connected to (docs/calls.md).

    ``Client(transport, **options)``, ``Client.http(url, **options)``, ``Client.stdio(command, **options)`` and
    ``ClientGroup(config, **options)`` make one from their keywords; ``options=ClientOptions(...)`` passes one
    whole (the keywords given beside it replace its fields). The client declares exactly the capabilities of
    the handlers given: in every modern request's ``_meta`` and in the legacy ``initialize``. A handler raising
    aborts the request with that error (a modern input round), or answers the server's request with a JSON-RPC
    error (legacy: an :class:`~mcpfsm.RpcError` raised by the handler gives its code and message, e.g. ``-1``
    for a refused sampling request; any other exception gives ``-32603``).

    Raises:
        ValueError: ``protocol`` is not one mcpfsm speaks, ``elicitation_modes`` names an unknown mode,
            ``max_input_rounds`` is less than 1, ``log_level``/``validate_output`` is not one mcpfsm knows, or
            ``progress_timeout``/``total_timeout`` is not a positive number.
        TypeError: a handler is not callable, ``elicitation_modes`` is a string, or ``max_input_rounds`` is not
            an int.
    """

    protocol: str = "auto"
    """``"auto"`` (probe ``server/discover``, fall back to ``initialize``), or a version to pin: ``"2026-07-28"``,
    ``"2025-11-25"`` (:data:`Protocol`)."""

    on_event: EventSink | None = None
    """Called with each audit event (:class:`~mcpfsm.CallEvent` and its kinds), synchronously."""

    on_notification: NotificationCallback | None = None
    """Called as ``on_notification(method, params)`` for each notification the server sends while a request is
    open (progress, log messages); may be async. With it, each ``tools/call`` carries ``_meta.progressToken`` (its
    request id) so that servers send progress. Without it, notifications are logged at DEBUG."""

    client_name: str = "mcpfsm"
    """The ``clientInfo.name`` sent to the server."""

    on_elicitation: InputHandler | None = None
    """``async (params) -> ElicitResult`` answering the server's ``elicitation/create`` (a multi round-trip input
    request in 2026-07-28, a server request in 2025-11-25): ``params`` is the request's params, the return value
    the result object (``{"action": "accept", "content": {...}}``, ``decline`` or ``cancel``). The ``default`` of
    every ``requestedSchema`` property an accepted form leaves out is filled in (SEP-1034)."""

    on_sampling: InputHandler | None = None
    """``async (params) -> CreateMessageResult`` for ``sampling/createMessage``."""

    on_roots: InputHandler | None = None
    """``async (params) -> ListRootsResult`` (``{"roots": [{"uri": "file://..."}]}``) for ``roots/list``."""

    elicitation_modes: Sequence[str] = ("form",)
    """The modes ``on_elicitation`` handles: ``("form",)``, ``("url",)`` or ``("form", "url")``. URL mode: show
    the full URL and ask for consent; never open it unasked. Kept as a tuple."""

    max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS
    """Input rounds one request may take (default 10); one more is a :class:`~mcpfsm.ProtocolError`."""

    audit_answers: bool = False
    """Also record the handlers' answers in the audit events (``CallEvent.input_responses``); off by default, so
    what a user typed never reaches an event."""

    log_level: LogLevel | None = None
    """Ask the server for its log messages at this level and above (MCP "Logging"): modern requests carry
    ``_meta["io.modelcontextprotocol/logLevel"]`` unless the server's ``server/discover`` result does not declare
    ``logging`` (SEP-2577 deprecates it), a legacy session sends ``logging/setLevel`` after ``initialize`` when
    the server declares ``logging``; the messages reach ``on_notification``."""

    cache: bool = True
    """Keep cacheable modern results for the ``ttlMs`` the server allows (SEP-2549); ``False`` sends every
    request."""

    validate_output: ValidateOutput = "raise"
    """Check ``structuredContent`` against a listed tool's ``outputSchema``: ``"raise"``
    (:class:`~mcpfsm.OutputValidationError`), ``"warn"`` (one WARNING) or ``"off"``."""

    server: str | None = None
    """The name every event of this client carries in ``CallEvent.server`` (a :class:`~mcpfsm.ClientGroup` gives
    each member its name in the configuration)."""

    store: Store | None = None
    """Where what outlives a call is kept (docs/stores.md): task records and shared cache entries, and the tokens
    of ``auth=`` unless the credential names its own ``store=``. ``None``: a :class:`~mcpfsm.MemoryStore` of the
    client's own."""

    tasks: bool = False
    """Declare the tasks extension (SEP-2663, docs/tasks.md) on ``tools/call``, so that a server may answer a call
    with a task that the client then polls to its end."""

    progress_timeout: float | None = None
    """Fail a call (plain or task) with :class:`~mcpfsm.TransportError` when neither its answer, a progress
    notification nor a task status change arrived for this many seconds; off (``None``) by default."""

    total_timeout: float | None = None
    """Fail a call with :class:`~mcpfsm.TransportError` when it is not over after this many seconds, task polling
    included; off (``None``) by default."""

    record: str | os.PathLike[str] | None = None
    """Write every exchange of the session to this cassette (docs/testing.md), replacing the file: versioned JSON
    Lines that ``mcpfsm.testing.replay`` and ``mcpfsm replay`` answer from. No token, secret, code or DPoP proof the
    client holds is written. A client group refuses it: a cassette records one server."""

    def __post_init__(self) -> None:
        """Check every option (the one place they are checked) and keep ``elicitation_modes`` as a tuple."""
        if self.protocol != "auto" and self.protocol not in SPOKEN_VERSIONS:
            raise ValueError(f"protocol must be 'auto' or one of {list(SPOKEN_VERSIONS)}, got {self.protocol!r}")
        levels = get_args(LogLevel)
        if self.log_level is not None and self.log_level not in levels:
            raise ValueError(f"log_level must be None or one of {list(levels)}, got {self.log_level!r}")
        if self.validate_output not in _VALIDATE_OUTPUT:
            raise ValueError(
                f"validate_output must be one of {list(_VALIDATE_OUTPUT)}, got {self.validate_output!r}"
            )
        for name in ("progress_timeout", "total_timeout"):
            seconds = getattr(self, name)
            if seconds is not None and not (isinstance(seconds, int | float) and seconds > 0):
                raise ValueError(f"{name} must be None or a number of seconds above 0, got {seconds!r}")
        for name in _HANDLERS:
            handler = getattr(self, name)
            if handler is not None and not callable(handler):
                raise TypeError(f"{name} must be an async callable, got {type(handler).__name__}")
        modes = self.elicitation_modes
        if isinstance(modes, str):
            raise TypeError("elicitation_modes must be a tuple of modes, e.g. ('form', 'url'), not a str")
        if not modes or any(mode not in ELICITATION_MODES for mode in modes):
            raise ValueError(f"elicitation_modes must name 'form' and/or 'url', got {tuple(modes)!r}")
        rounds = self.max_input_rounds
        if not isinstance(rounds, int) or isinstance(rounds, bool):
            raise TypeError(f"max_input_rounds must be an int, got {type(rounds).__name__}")
        if rounds < 1:
            raise ValueError(f"max_input_rounds must be at least 1, got {rounds}")
        # A frozen value: the modes become a tuple whatever sequence was given (the one write, while it is made).
        object.__setattr__(self, "elicitation_modes", tuple(dict.fromkeys(modes)))

    @classmethod
    def of(cls, options: ClientOptions | None, keywords: ClientKeywords) -> ClientOptions:
        """``options`` with the ``keywords`` given beside it in its place (checked again), or a new value of them.

        Raises:
            ValueError, TypeError: as the class says.
        """
        if options is None:
            return cls(**keywords)
        return replace(options, **keywords) if keywords else options


class ClientKeywords(TypedDict, total=False):
    """:class:`ClientOptions` as keywords: what ``**options`` of the client's factories and ``ClientGroup`` accept.

    The same names and types as the fields of :class:`ClientOptions`, which documents them.
    """

    protocol: str
    on_event: EventSink | None
    on_notification: NotificationCallback | None
    client_name: str
    on_elicitation: InputHandler | None
    on_sampling: InputHandler | None
    on_roots: InputHandler | None
    elicitation_modes: Sequence[str]
    max_input_rounds: int
    audit_answers: bool
    log_level: LogLevel | None
    cache: bool
    validate_output: ValidateOutput
    server: str | None
    store: Store | None
    tasks: bool
    progress_timeout: float | None
    total_timeout: float | None
    record: str | os.PathLike[str] | None
