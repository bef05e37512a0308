"""The default ``authorize`` of :class:`~mcpfsm.OAuth`: the system browser and a loopback listener (RFC 8252).

:class:`LoopbackAuthorizer` listens on the redirect URI's loopback address and port (RFC 8252 §7.3), tells
the user where to log in (one line on stderr, with the URL, since a browser may not open on a remote
shell), opens the system browser there, and waits for the one request the authorization server sends the
browser back with. That request's URL is the answer; the browser gets a page saying the window can be
closed. Nobody completing the login within ``timeout`` seconds is an :class:`~mcpfsm.AuthorizationError`
that says so; the listener is closed in every case.

Anything on the machine can connect to a loopback port, so a request ends the wait only when it is the
redirect of this login: its ``state`` is the one the authorization URL carries (RFC 6749 §10.12, RFC 8252
§8.9). A callback without it, or with another (a forged ``code`` or ``error`` alike), gets a 400 page and
the listener keeps waiting. Connections are served concurrently, each with its own budget to send its
request head (10 s), so idle ones never delay the browser; past 16 connections still sending their head,
the oldest is dropped.
"""

from __future__ import annotations

import contextlib
import html
import secrets
import sys
import webbrowser
from collections import deque
from collections.abc import Callable
from typing import Final
from urllib.parse import parse_qs, urlsplit

import trio

from .._core.credentials import DEFAULT_REDIRECT_URI
from .._core.errors import AuthorizationError
from .._core.oauth.urls import is_loopback_host
from .._machines.authorization import State

__all__ = ["LoopbackAuthorizer"]

_MAX_REQUEST: Final = 16 * 1024
_READ_SECONDS: Final = 10.0
_MAX_READING: Final = 16
_REASONS: Final = {200: "OK", 400: "Bad Request", 404: "Not Found"}


def _stderr_line(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


class LoopbackAuthorizer:
    """Open the browser at the authorization URL and receive the redirect on ``redirect_uri`` (loopback only).

    Args:
        redirect_uri: an ``http`` URL on ``127.0.0.1``, ``[::1]`` or ``localhost`` with an explicit port; the
            same URL the client registers.
        timeout: seconds to wait for the browser to come back.
        open_browser: open the system browser (``webbrowser.open``); ``False`` only shows the URL.
        announce: receives the line telling the user where to log in (default: written to stderr).

    Raises:
        ValueError: ``redirect_uri`` is not a loopback ``http`` URL with a port.
    """

    def __init__(
        self,
        redirect_uri: str = DEFAULT_REDIRECT_URI,
        *,
        timeout: float = 300.0,
        open_browser: bool = True,
        announce: Callable[[str], object] | None = None,
    ) -> None:
        """Check ``redirect_uri``; nothing listens until the authorizer is called."""
        try:
            parts = urlsplit(redirect_uri)
            host, port = parts.hostname, parts.port
        except ValueError:
            host, port = None, None
        if parts.scheme != "http" or not is_loopback_host(host) or port is None:
            raise ValueError(
                f"the default authorize listens on a loopback http redirect_uri with a port, got {redirect_uri!r}"
            )
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, got {timeout!r}")
        self.redirect_uri = redirect_uri
        self.timeout = timeout
        self.open_browser = open_browser
        self._announce = announce or _stderr_line
        self._host = host.strip("[]") if host else "127.0.0.1"
        self._port = port
        self._path = parts.path or "/"
        self._netloc = parts.netloc

    def __repr__(self) -> str:
        return f"LoopbackAuthorizer({self.redirect_uri!r}, timeout={self.timeout:g})"

    async def __call__(self, url: str) -> str:
        """Send the user to ``url`` and return the URL the browser was redirected to.

        Only a callback carrying the ``state`` of ``url`` ends the wait (any callback, when ``url`` has none);
        the others get a 400 page.

        Raises:
            AuthorizationError: the redirect URI's port cannot be listened on, or nobody completed the
                login within ``timeout`` seconds.
        """
        try:
            listeners = await trio.open_tcp_listeners(self._port, host=self._host)
        except OSError as exc:
            raise AuthorizationError(
                f"cannot listen on {self.redirect_uri} for the browser's redirect: {exc.strerror or exc}"
                " (another program holds the port: pass another loopback redirect_uri)",
                state=State.authorizing,
            ) from exc
        received: list[str] = []
        try:
            self._announce(
                f"mcpfsm: log in to authorize access (waiting up to {self.timeout:g} s for {self.redirect_uri}):\n"
                f"  {url}"
            )
            with trio.move_on_after(self.timeout):
                async with trio.open_nursery() as nursery:
                    login = _Login(_state_of(url), received, nursery)
                    for listener in listeners:
                        nursery.start_soon(self._serve, listener, login)
                    if self.open_browser:
                        nursery.start_soon(self._open, url)
        finally:
            for listener in listeners:
                await listener.aclose()
        if not received:
            raise AuthorizationError(
                f"nobody completed the login within {self.timeout:g} s (the browser never came back to"
                f" {self.redirect_uri})",
                state=State.authorizing,
            )
        return received[0]

    async def _open(self, url: str) -> None:
        try:
            opened = await trio.to_thread.run_sync(webbrowser.open, url, abandon_on_cancel=True)
        except Exception:  # webbrowser's own errors (a broken BROWSER setting): the URL is shown anyway
            opened = False
        if not opened:
            self._announce("mcpfsm: no browser could be opened; open the URL above yourself")

    async def _serve(self, listener: trio.SocketListener, login: _Login) -> None:
        while True:
            stream = await listener.accept()
            login.nursery.start_soon(self._answer, stream, login)

    async def _answer(self, stream: trio.SocketStream, login: _Login) -> None:
        async with stream:
            target = await _read_target(stream, login.reading)
            if target is None:
                return
            path, _, query = target.partition("?")
            fields = parse_qs(query, keep_blank_values=True)
            if path != self._path or not ("code" in fields or "error" in fields):
                await _respond(stream, 404, "Not the authorization redirect.")
                return
            if not login.expects(fields.get("state", [])):
                # Not this login's redirect (RFC 6749 §10.12): a stale tab, or a forged request. Keep waiting.
                await _respond(stream, 400, "Not the redirect of the login mcpfsm is waiting for.")
                return
            if "error" in fields:
                await _respond(stream, 200, f"The authorization server refused: {fields['error'][0]}.")
            else:
                await _respond(stream, 200, "mcpfsm received the authorization. You can close this window.")
            login.received.append(f"http://{self._netloc}{target}")
            login.nursery.cancel_scope.cancel()


class _Login:
    # One wait for the browser: the state expected, the answer, the connections still sending their head.
    __slots__ = ("nursery", "reading", "received", "state")

    def __init__(self, state: str | None, received: list[str], nursery: trio.Nursery) -> None:
        self.state = state
        self.received = received
        self.nursery = nursery
        self.reading: deque[trio.CancelScope] = deque()

    def expects(self, states: list[str]) -> bool:
        # The authorization URL's state, once (compared in constant time); any, when the URL carried none.
        if self.state is None:
            return True
        return len(states) == 1 and secrets.compare_digest(states[0].encode(), self.state.encode())


def _state_of(url: str) -> str | None:
    # The state the authorization URL carries: the last one (mcpfsm's own comes after the endpoint's query).
    try:
        states = parse_qs(urlsplit(url).query).get("state")
    except ValueError:
        return None
    return states[-1] if states else None


async def _read_target(stream: trio.SocketStream, reading: deque[trio.CancelScope]) -> str | None:
    # One request head, at most 16 KiB, within 10 s; anything else is dropped without an answer. Past
    # _MAX_READING connections still sending their head, the oldest is dropped: idle ones never crowd out the browser.
    data = b""
    scope = trio.CancelScope(deadline=trio.current_time() + _READ_SECONDS)
    reading.append(scope)
    if len(reading) > _MAX_READING:
        reading.popleft().cancel()
    try:
        with scope:
            while b"\r\n\r\n" not in data and len(data) < _MAX_REQUEST:
                try:
                    chunk = await stream.receive_some(4096)
                except trio.BrokenResourceError:
                    return None
                if not chunk:
                    break
                data += chunk
    finally:
        with contextlib.suppress(ValueError):
            reading.remove(scope)
    if scope.cancelled_caught and b"\r\n\r\n" not in data:
        return None
    line = data.split(b"\r\n", 1)[0].decode("latin-1")
    method, _, rest = line.partition(" ")
    target = rest.rpartition(" ")[0]
    if method != "GET" or not target.startswith("/"):
        return None
    return target


async def _respond(stream: trio.SocketStream, status: int, text: str) -> None:
    page = f"<!doctype html><title>mcpfsm</title><p>{html.escape(text)}</p>\n".encode()
    head = (
        f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(page)}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n"
    ).encode()
    with contextlib.suppress(trio.BrokenResourceError):
        await stream.send_all(head + page)
