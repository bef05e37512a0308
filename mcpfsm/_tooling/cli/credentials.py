"""The authorization options every network command shares, and the interactive login the commands use.

``--auth oauth`` (the default) reuses the tokens ``mcpfsm login`` stored for the URL (a ``FileTokenStore`` at
:func:`~mcpfsm._client.stores.default_token_path`) and, when the server asks for authorization anyway, runs
the browser login: one line with the URL to open, then a progress line while waiting for the browser.
``--auth client-credentials`` authorizes a headless agent (``--client-id`` with ``--client-secret``, or the
``MCPFSM_CLIENT_SECRET`` variable, or ``--private-key FILE``); ``--auth none`` sends no credentials.
A static bearer token (``--token TOKEN`` or ``--token @FILE``), an ``Authorization`` header given with
``--header`` and credentials in the URL are credentials of their own: each implies ``--auth none``, and
combining one with ``--auth oauth`` or ``--auth client-credentials`` (or two of them) is a usage error.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Final

import trio

from ..._client.loopback import LoopbackAuthorizer
from ..._client.stores import FileTokenStore, default_token_path
from ..._core.credentials import DEFAULT_REDIRECT_URI, ClientCredentials, OAuth
from ..._core.errors import AuthorizationError
from ..._transports.http import carries_credentials
from .terminal import redraw, write

__all__ = [
    "AUTH_CHOICES",
    "SECRET_VARIABLE",
    "BrowserLogin",
    "add_auth_options",
    "add_login_options",
    "auth_from",
    "positive",
]

AUTH_CHOICES: Final = ("oauth", "client-credentials", "none")
SECRET_VARIABLE: Final = "MCPFSM_CLIENT_SECRET"


def positive(text: str) -> float:
    """The argparse type of a number of seconds (``--timeout``, ``--login-timeout``): a float greater than 0.

    Raises:
        argparse.ArgumentTypeError: ``text`` is not a number, or not greater than 0.
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


def add_login_options(parser: argparse.ArgumentParser) -> None:
    """The options of the browser login (also those of ``mcpfsm login``)."""
    group = parser.add_argument_group("authorization (OAuth 2.1)")
    group.add_argument("--client-id", metavar="ID", help="a pre-registered (or client-credentials) client id")
    group.add_argument(
        "--client-secret", metavar="SECRET", help=f"its secret (default: the {SECRET_VARIABLE} environment variable)"
    )
    group.add_argument("--client-issuer", metavar="URL", help="the authorization server a pre-registered id is for")
    group.add_argument("--scope", metavar="SCOPES", help="the scopes to ask for (default: what the server asks for)")
    group.add_argument(
        "--redirect-uri", default=DEFAULT_REDIRECT_URI, metavar="URI", help="the loopback URL the browser returns to"
    )
    group.add_argument("--no-browser", action="store_true", help="print the login URL without opening a browser")
    group.add_argument(
        "--login-timeout", type=positive, default=300.0, metavar="SECONDS", help="how long to wait for the browser"
    )


def add_auth_options(parser: argparse.ArgumentParser) -> None:
    """``--auth`` and the login options, for every command that talks to a server."""
    parser.add_argument(
        "--auth",
        choices=AUTH_CHOICES,
        default=None,
        help="oauth: stored tokens, else a browser login when asked (the default, unless the URL carries"
        " credentials); client-credentials: a headless agent; none: no credentials",
    )
    parser.add_argument("--private-key", metavar="FILE", help="client-credentials: a PEM key (private_key_jwt)")
    parser.add_argument(
        "--token",
        metavar="TOKEN|@FILE",
        help="a static bearer token (or a file holding one) sent as 'Authorization: Bearer TOKEN'; implies"
        " --auth none",
    )
    add_login_options(parser)


class BrowserLogin:
    """The command line's ``authorize``: the loopback listener, one line with the URL, then a progress line.

    On a terminal the progress line counts the seconds in place; elsewhere (a pipe, a log) it is written once.
    """

    def __init__(self, redirect_uri: str, *, open_browser: bool, timeout: float) -> None:
        """Prepare the listener; nothing listens until called."""
        self._announced = trio.Event()
        self._loopback = LoopbackAuthorizer(
            redirect_uri, timeout=timeout, open_browser=open_browser, announce=self._announce
        )
        self._timeout = timeout

    def _announce(self, text: str) -> None:
        write(sys.stderr, text)  # the URL names the authorization server's endpoint: escaped like any server text
        if not sys.stderr.isatty():
            # Written here, not by the progress task, which a quick browser may end before it ever runs.
            write(sys.stderr, f"mcpfsm: waiting for the browser (up to {self._timeout:g} s; Ctrl-C to give up)")
        self._announced.set()

    async def __call__(self, url: str) -> str:
        """Run the loopback login with a progress line on stderr."""
        failure: AuthorizationError | None = None
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._progress)
            try:
                redirect = await self._loopback(url)
            except AuthorizationError as exc:
                # Raised outside the nursery, so the caller sees it as itself, not in an exception group.
                failure = exc
            finally:
                nursery.cancel_scope.cancel()
        if failure is not None:
            raise failure
        return redirect

    async def _progress(self) -> None:
        await self._announced.wait()
        if not sys.stderr.isatty():
            return
        waited = 0
        try:
            while True:
                waiting = f"{waited} s of {self._timeout:g} s"
                redraw(sys.stderr, f"mcpfsm: waiting for the browser: {waiting} (Ctrl-C to give up)")
                await trio.sleep(1)
                waited += 1
        finally:
            write(sys.stderr, "")


def auth_from(args: argparse.Namespace) -> OAuth | ClientCredentials | str | None:
    """The ``auth=`` of the client a command builds from its options (a ``str``: a static bearer token).

    Raises:
        ValueError: inconsistent options or an unreadable key or token file (a usage error, said in one line).
    """
    explicit: str | None = getattr(args, "auth", None)
    own = _own_credentials(args)
    if own is not None and explicit not in (None, "none"):
        raise ValueError(f"{own} brings its own credentials: it cannot be combined with --auth {explicit}")
    token = getattr(args, "token", None)
    if token is not None:
        return _read_token(token)
    kind = explicit or ("none" if own is not None else "oauth")
    if kind == "none":
        return None
    secret = args.client_secret or os.environ.get(SECRET_VARIABLE) or None
    if kind == "client-credentials":
        if not args.client_id:
            raise ValueError("--auth client-credentials needs --client-id")
        key = _read_key(args.private_key) if args.private_key else None
        if (secret is None) == (key is None):
            raise ValueError(
                f"--auth client-credentials needs exactly one of --client-secret ({SECRET_VARIABLE}) and --private-key"
            )
        return ClientCredentials(
            args.client_id,
            client_secret=None if key else secret,
            private_key_pem=key,
            scope=args.scope,
            issuer=args.client_issuer,
        )
    login = BrowserLogin(args.redirect_uri, open_browser=not args.no_browser, timeout=args.login_timeout)
    return OAuth(
        redirect_uri=args.redirect_uri,
        authorize=login,
        client_id=args.client_id,
        client_secret=secret if args.client_id else None,
        client_issuer=args.client_issuer,
        scope=args.scope,
        store=FileTokenStore(default_token_path()),
    )


def _own_credentials(args: argparse.Namespace) -> str | None:
    # What names credentials of the user's own besides --auth: --token, an Authorization header, the URL's.
    given = []
    if getattr(args, "token", None) is not None:
        given.append("--token")
    if any(pair.partition(":")[0].strip().lower() == "authorization" for pair in getattr(args, "header", None) or ()):
        given.append("--header Authorization")
    # Credentials in the URL are the user's choice of authorization (HTTP Basic): no OAuth then.
    url = getattr(args, "url", None)
    if url is not None and carries_credentials(url):
        given.append("the URL's user:password")
    if len(given) > 1:
        raise ValueError(f"give one of {' and '.join(given)}, not both: each sends an Authorization header")
    return given[0] if given else None


def _read_token(value: str) -> str:
    # A token read from a file loses the line end an editor or `echo` leaves; it is never shown in a message.
    if value.startswith("@"):
        path = value[1:]
        try:
            with open(path, encoding="utf-8") as handle:
                value = handle.read().strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ValueError(f"cannot read --token file {path!r}: {reason}") from exc
    if not value or not all("\x21" <= char <= "\x7e" for char in value):
        raise ValueError("--token must be visible ASCII without spaces (RFC 6750 §2.1); the token is not shown")
    return value


def _read_key(path: str) -> str:
    try:
        with open(path, encoding="ascii") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ValueError(f"cannot read --private-key {path!r}: {reason}") from exc
