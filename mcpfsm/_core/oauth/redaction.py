"""Secrets: which values are secret, and taking them out of what a server says back.

The one home of redaction in the authorization flow: :data:`SECRET_FORM_FIELDS` names the secret fields of
a request, :class:`Secrets` is the set of values one flow holds or has sent, and
:func:`redact_server_text` takes them out of a server's text before it reaches an error, an event or a
log line (RFC 6749 §5.2 lets a server say anything in ``error_description``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import quote, quote_plus

from ..errors import AuthorizationError
from .token_request import TokenRequest
from .tokens import TokenSet

__all__ = [
    "REDACTED",
    "SECRET_FORM_FIELDS",
    "Secrets",
    "redact_server_text",
]


REDACTED: Final = "[redacted]"
"""What a held secret becomes in the server's error text."""

SECRET_FORM_FIELDS: Final = frozenset(
    {"client_secret", "client_assertion", "code", "code_verifier", "refresh_token", "assertion", "subject_token"}
)
"""Form fields of a token request whose values are secrets (RFC 6749 §2.3.1, §4.1.3, §6; RFC 7636 §4.5;
RFC 7521 §4.2; RFC 7523 §2.1; RFC 8693 §2.1)."""


def redact_server_text(error: AuthorizationError, held: Iterable[str]) -> AuthorizationError:
    """``error`` with every held secret taken out of the text the server chose (``error``, ``error_description``).

    A server may echo what it was sent (a client secret, a refresh token, a code, a verifier, an assertion)
    in its ``error_description`` (RFC 6749 §5.2) or in an authorization response's error (RFC 6749
    §4.1.2.1); that text goes into the error's message, and no secret may (README, "Authorization"). Each
    held value is replaced by :data:`REDACTED` wherever it occurs, as is or percent-encoded (as a form or a
    query carries it), longest first. The reason, mcpfsm's own words, is kept; so is the cause.

    Returns:
        ``error`` itself when nothing needed redacting, else a new :class:`AuthorizationError`.
    """
    forms = sorted(
        {form for value in held if value for form in (value, quote_plus(value), quote(value, safe=""))},
        key=len,
        reverse=True,
    )

    def scrub(text: str | None) -> str | None:
        if text is None:
            return None
        for form in forms:
            text = text.replace(form, REDACTED)
        return text

    code, description = scrub(error.error), scrub(error.error_description)
    if (code, description) == (error.error, error.error_description):
        return error
    clean = AuthorizationError(error.reason, state=error.state, error=code, error_description=description)
    clean.__cause__ = error.__cause__
    clean.__suppress_context__ = True
    return clean


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

    def redact(self, error: AuthorizationError) -> AuthorizationError:
        """``error`` with these secrets taken out of the server's text (:func:`redact_server_text`)."""
        return redact_server_text(error, self.values)
