"""Secrets: which values are secret, and taking them out of every text that leaves the client.

The one home of redaction: :data:`SECRET_FORM_FIELDS` names the secret fields of a request, :class:`Secrets`
is a set of values a client or one flow holds or has sent, and :func:`redact` is the one function that takes
them out of a text, in every encoding a server could quote them back in. Everything else here is built on
it: :func:`redact_server_text` for the server's fields of an :class:`~mcpfsm.AuthorizationError`,
:meth:`Secrets.scrub` for an exception about to leave the client (its message and the server's text it
carries, along its chain), :meth:`Secrets.text` for a log line.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote_plus

from ..errors import AuthorizationError
from .token_request import TokenRequest
from .tokens import TokenSet

__all__ = [
    "REDACTED",
    "SECRET_FORM_FIELDS",
    "Secrets",
    "basic_credentials",
    "redact",
    "redact_server_text",
]


REDACTED: Final = "[redacted]"
"""What a held secret becomes in any text that leaves the client."""

SECRET_FORM_FIELDS: Final = frozenset(
    {"client_secret", "client_assertion", "code", "code_verifier", "refresh_token", "assertion", "subject_token"}
)
"""Form fields of a token request whose values are secrets (RFC 6749 §2.3.1, §4.1.3, §6; RFC 7636 §4.5;
RFC 7521 §4.2; RFC 7523 §2.1; RFC 8693 §2.1)."""

_TEXT_ATTRIBUTES: Final = ("message", "reason", "error", "error_description", "url")
"""The attributes of mcpfsm's errors that hold text a server chose (``RpcError.message``, the OAuth fields), or
that their text is made of (a connection error's ``url``, whose query may hold a key)."""


def basic_credentials(client_id: str, client_secret: str) -> str:
    """The credentials of ``Authorization: Basic`` for a client: Base64 of ``id:secret``, each form-encoded.

    RFC 6749 §2.3.1; a secret in this form is as secret as the secret itself.
    """
    return base64.b64encode(f"{quote_plus(client_id)}:{quote_plus(client_secret)}".encode()).decode("ascii")


def _character(char: str) -> str:
    # Every way one character of a secret can come back: as is; percent-encoded (RFC 3986 §2.1: hex digits of
    # either case) byte by byte in UTF-8; a space form-encoded as "+" (WHATWG URL, application/x-www-form-urlencoded);
    # JSON-escaped (RFC 8259 §7: \uXXXX of either case, "\/" for "/", and the two-character escapes).
    forms = [re.escape(char)]
    forms.append("".join(f"%(?i:{byte:02x})" for byte in char.encode("utf-8")))
    if char == " ":
        forms.append(r"\+")
    code = ord(char)
    if code <= 0xFFFF:
        forms.append(rf"\\u(?i:{code:04x})")
    if char in '/"\\':
        forms.append(re.escape("\\" + char))
    return forms[0] if len(forms) == 1 else f"(?:{'|'.join(forms)})"


_SHORT: Final = 8
"""A secret shorter than this is taken out only where it stands alone (no letter or digit next to it): a token
``h`` must not turn "the" into "t[redacted]e", and a text that quotes it alone still loses it."""


def _secret(value: str) -> str:
    pattern = "".join(_character(char) for char in value)
    return pattern if len(value) >= _SHORT else f"(?<![0-9A-Za-z]){pattern}(?![0-9A-Za-z])"


@functools.lru_cache(maxsize=64)
def _pattern(values: frozenset[str]) -> re.Pattern[str] | None:
    # One alternation, longest secret first, so a secret that contains another is taken out whole.
    if not values:
        return None
    ordered = sorted(values, key=lambda value: (-len(value), value))
    return re.compile("|".join(_secret(value) for value in ordered))


def redact(text: str, secrets: Iterable[str]) -> str:
    r"""``text`` with every one of ``secrets`` replaced by :data:`REDACTED`, in whatever encoding it appears.

    The one redaction function of mcpfsm: every text that leaves the client and may quote what a server
    said (an exception's message, an event's ``error``, a log line, a span's status) comes through it. A
    secret is found as is, percent-encoded with upper- or lower-case hex digits (a query or a form), with
    ``+`` for a space (a form), JSON-escaped (``\u0041``, ``\/``), or any mix of these character by
    character; a Basic credential is one more secret (:func:`basic_credentials`). Empty secrets are ignored;
    one shorter than 8 characters is taken out only where no letter or digit touches it.
    """
    if not text:
        return text
    pattern = _pattern(frozenset(value for value in secrets if value))
    if pattern is None:
        return text
    return pattern.sub(REDACTED, text)


def redact_server_text(error: AuthorizationError, held: Iterable[str]) -> AuthorizationError:
    """``error`` with every held secret taken out of the text the server chose (``error``, ``error_description``).

    A server may echo what it was sent (a client secret, a refresh token, a code, a verifier, an assertion)
    in its ``error_description`` (RFC 6749 §5.2) or in an authorization response's error (RFC 6749
    §4.1.2.1); that text goes into the error's message, and no secret may (docs/authorization.md). Each
    held value goes through :func:`redact`. The reason, mcpfsm's own words, is kept; so is the cause.

    Returns:
        ``error`` itself when nothing needed redacting, else a new :class:`AuthorizationError`.
    """
    values = frozenset(value for value in held if value)

    def scrub(text: str | None) -> str | None:
        return None if text is None else redact(text, values)

    code, description = scrub(error.error), scrub(error.error_description)
    if (code, description) == (error.error, error.error_description):
        return error
    clean = AuthorizationError(error.reason, state=error.state, error=code, error_description=description)
    clean.__cause__ = error.__cause__
    clean.__suppress_context__ = True
    return clean


def _scrub_value(value: Any, values: frozenset[str]) -> Any:
    # A JSON value (an error's ``data``) with the secrets taken out of every string in it.
    if isinstance(value, str):
        return redact(value, values)
    if isinstance(value, list):
        return [_scrub_value(item, values) for item in value]
    if isinstance(value, dict):
        return {
            redact(key, values) if isinstance(key, str) else key: _scrub_value(item, values)
            for key, item in value.items()
        }
    return value


@dataclass(frozen=True, slots=True)
class Secrets:
    """The secret values one flow holds or has sent: what :meth:`redact` takes out of a server's text.

    A value: each ``with_*`` returns a new one. Its repr counts the values and never shows one.

    Attributes:
        values: the secrets (empty strings are ignored).
    """

    values: frozenset[str] = field(default=frozenset(), repr=False)

    def __repr__(self) -> str:
        return f"Secrets({len(self.values)} values)"

    def with_values(self, *values: object) -> Secrets:
        """These secrets and every ``str`` among ``values`` (anything else, ``None`` included, is skipped)."""
        added = {value for value in values if isinstance(value, str) and value}
        return self if added <= self.values else Secrets(self.values | added)

    def with_tokens(self, tokens: TokenSet | None) -> Secrets:
        """These secrets and the access and refresh tokens of ``tokens``."""
        return self if tokens is None else self.with_values(tokens.access_token, tokens.refresh_token)

    def with_request(self, request: TokenRequest) -> Secrets:
        """These secrets and what ``request`` sends: its secret form fields, ``Authorization`` and ``DPoP``.

        For ``client_secret_basic`` (RFC 6749 §2.3.1) both the whole header value and its Base64
        credentials count.
        """
        sent: list[str] = [value for name, value in request.form if name in SECRET_FORM_FIELDS]
        for name, value in request.headers:
            if name.lower() in ("authorization", "dpop"):
                sent.append(value)
                scheme, _, credentials = value.partition(" ")
                if scheme.lower() == "basic" and credentials:
                    sent.append(credentials)
        return self.with_values(*sent)

    def with_client(self, client_id: str, client_secret: str | None) -> Secrets:
        """These secrets, ``client_secret`` and the Basic credentials it makes with ``client_id``."""
        if not client_secret:
            return self
        return self.with_values(client_secret, basic_credentials(client_id, client_secret))

    def with_header(self, value: str) -> Secrets:
        """These secrets and what an ``Authorization`` (or ``DPoP``) header value holds.

        The whole value and its credentials (``Bearer <token>``: the token); for ``Basic`` also the decoded
        ``id:secret`` and the secret.
        """
        scheme, _, credentials = value.strip().partition(" ")
        credentials = credentials.strip()
        found = [value, credentials] if credentials else [value]
        if scheme.lower() == "basic" and credentials:
            try:
                pair = base64.b64decode(credentials, validate=True).decode("utf-8")
            except ValueError:
                pair = ""
            found.extend((pair, pair.partition(":")[2]))
        return self.with_values(*found)

    def redact(self, error: AuthorizationError) -> AuthorizationError:
        """``error`` with these secrets taken out of the server's text (:func:`redact_server_text`)."""
        return redact_server_text(error, self.values)

    def text(self, text: str) -> str:
        """``text`` with these secrets taken out (:func:`redact`)."""
        return redact(text, self.values) if self.values else text

    def scrub(self, error: BaseException) -> None:
        """Take these secrets out of ``error`` in place, and out of every exception it was raised from.

        In place, so the one exception object that an event, a span, a log line and the caller all read is
        clean before any of them does: its ``args`` (the message ``str`` and ``repr`` show), the server's text
        mcpfsm's errors carry (``message``, ``reason``, ``error``, ``error_description``), a JSON-RPC
        error's ``data`` and an ``OSError``'s file names, along ``__cause__`` and ``__context__``.
        """
        if not self.values:
            return
        values = self.values
        seen: set[int] = set()
        current: BaseException | None = error
        pending = [error]
        while pending:
            current = pending.pop()
            if current is None or id(current) in seen:
                continue
            seen.add(id(current))
            current.args = tuple(_scrub_value(arg, values) for arg in current.args)
            for name in _TEXT_ATTRIBUTES:
                text = getattr(current, name, None)
                if isinstance(text, str):
                    _set(current, name, redact(text, values))
            data = getattr(current, "data", None)
            if data is not None:
                _set(current, "data", _scrub_value(data, values))
            if isinstance(current, OSError):
                # What an OSError's text shows besides its args: the paths (a working directory, a command).
                for name in ("filename", "filename2"):
                    path = getattr(current, name)
                    if isinstance(path, str):
                        _set(current, name, redact(path, values))
            pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)


def _set(error: BaseException, name: str, value: Any) -> None:
    # A read-only property's text comes from args, scrubbed already.
    with contextlib.suppress(AttributeError):
        setattr(error, name, value)
