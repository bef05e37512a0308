"""TLS trust and client certificates for HTTPS, as httpx configures them.

``verify`` and ``cert`` mean what they mean to ``httpx.AsyncClient``:

- ``verify=True`` (the default): httpx's ``create_ssl_context`` — the CA bundle in ``SSL_CERT_FILE``
  or the directory in ``SSL_CERT_DIR`` when ``trust_env`` is on and one is set, else certifi's bundle;
- ``verify=False``: no certificate or host name check (for a test server; never in production);
- ``verify="ca.pem"`` (or a directory of hashed certificates, or a ``Path``): trust exactly those CAs;
- ``verify=ssl_context``: used as given;
- ``cert="client.pem"`` (certificate and key in one file) or ``cert=("client.crt", "client.key")``:
  a client certificate (mutual TLS), loaded into the context.

A path is loaded here, with the standard library, rather than handed to httpx, which deprecates
``verify=<str>`` and ``cert=`` in favour of exactly this.
"""

from __future__ import annotations

import os
import ssl
from typing import TypeAlias

from .._core.errors import TransportError

__all__ = ["CertTypes", "VerifyTypes", "ssl_context", "system_trust"]

VerifyTypes: TypeAlias = bool | str | os.PathLike[str] | ssl.SSLContext
"""What ``verify=`` accepts."""

CertTypes: TypeAlias = str | os.PathLike[str] | tuple[str | os.PathLike[str], str | os.PathLike[str]]
"""What ``cert=`` accepts: one PEM file with certificate and key, or ``(certificate, key)``."""


def ssl_context(verify: VerifyTypes = True, cert: CertTypes | None = None, *, trust_env: bool = True) -> ssl.SSLContext:
    """The client-side TLS context for ``verify`` and ``cert`` (see the module docstring).

    Raises:
        TransportError: a CA bundle or a client certificate cannot be loaded.
        TypeError: ``verify`` or ``cert`` has a type not listed above.
    """
    if isinstance(verify, ssl.SSLContext):
        context = verify
    elif isinstance(verify, bool):
        import httpx  # only here: `import mcpfsm` does not import httpx

        context = httpx.create_ssl_context(verify=verify, trust_env=trust_env)
    elif isinstance(verify, str | os.PathLike):
        path = os.fspath(verify)
        try:
            if os.path.isdir(path):
                context = ssl.create_default_context(capath=path)
            else:
                context = ssl.create_default_context(cafile=path)
        except (OSError, ssl.SSLError) as exc:
            raise TransportError(f"cannot load the CA certificates in {path!r}: {_reason(exc)}") from exc
    else:
        raise TypeError(f"verify must be a bool, a path or an ssl.SSLContext, got {type(verify).__name__}")
    if cert is not None:
        if isinstance(cert, tuple):
            certfile, keyfile = os.fspath(cert[0]), os.fspath(cert[1])
        elif isinstance(cert, str | os.PathLike):
            certfile, keyfile = os.fspath(cert), None
        else:
            raise TypeError(f"cert must be a path or a (certificate, key) pair, got {type(cert).__name__}")
        try:
            context.load_cert_chain(certfile, keyfile)
        except (OSError, ssl.SSLError) as exc:
            raise TransportError(f"cannot load the client certificate {certfile!r}: {_reason(exc)}") from exc
    return context


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)


def system_trust() -> ssl.SSLContext:
    """A client TLS context that verifies with the operating system's trust store (``verify="system"``).

    It comes from the ``truststore`` package (the ``system-trust`` extra): the platform's verifier on macOS and
    Windows, the system's CA bundle on Linux, so certificates an administrator installed are trusted as they
    are by the system's own programs.

    Raises:
        ImportError: ``truststore`` is not installed; the message says how to install it.
    """
    try:
        import truststore  # the optional extra, where it is asked for
    except ImportError as exc:
        raise ImportError(
            "verify='system' uses the operating system's trust store through the truststore package, which is not"
            " installed: pip install 'mcpfsm[system-trust]' (or pass verify=True, a CA bundle path or an SSLContext)"
        ) from exc
    context: ssl.SSLContext = truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return context
