"""Answering a server's elicitation in the terminal, for ``mcpfsm call`` (MCP "Elicitation", both eras).

A form request asks whether to answer at all, then prompts once per ``requestedSchema`` property, showing
its type, whether it is required and its default; an empty line keeps the default (mcpfsm fills it in,
SEP-1034) or leaves an optional property out. A URL request shows the full URL and asks whether the user
has been there; mcpfsm never opens it. With ``--yes`` nothing is asked: a form is accepted with its
defaults (declined when a required property has none) and a URL request is declined, since nobody is
there to visit it. Prompts go to stderr and answers are read from stdin, so the result on stdout stays
clean; end of input cancels. Text from the server is shown with control characters escaped, so it
cannot drive the terminal.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping
from typing import IO, Any, Final

import trio

from .terminal import shown, write

__all__ = ["TerminalElicitation"]

_YES: Final = ("y", "yes")
_NO: Final = ("n", "no")
_CANCEL: Final = ("c", "cancel")
_TRUE: Final = ("y", "yes", "true", "1")
_FALSE: Final = ("n", "no", "false", "0")


class _Cancelled(Exception):
    """End of input: the user answered nothing."""


class TerminalElicitation:
    """An ``on_elicitation`` handler that asks the user at the terminal; see the module docstring.

    Args:
        stdin: where answers are read, one line each.
        stderr: where prompts go.
        assume_yes: ``--yes``: ask nothing (accept forms with their defaults, decline URLs).
        pause: a context manager factory that keeps the progress spinner off the screen while asking.
    """

    def __init__(
        self,
        *,
        stdin: IO[str],
        stderr: IO[str],
        assume_yes: bool = False,
        pause: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext,
    ) -> None:
        """Prepare the handler; nothing is read until the server asks."""
        self._stdin = stdin
        self._stderr = stderr
        self._assume_yes = assume_yes
        self._pause = pause
        self._lock = trio.Lock()
        self._echoed = _isatty(stdin)

    async def __call__(self, params: dict[str, Any]) -> dict[str, Any]:
        """Answer one ``elicitation/create`` (form or URL mode) as an ``ElicitResult``."""
        # Input requests of one round are answered concurrently; the terminal asks one at a time.
        async with self._lock:
            with self._pause():
                try:
                    if params.get("mode") == "url":
                        return await self._url(params)
                    return await self._form(params)
                except _Cancelled:
                    self._say("mcpfsm: no answer (end of input): cancelled")
                    return {"action": "cancel"}

    # --- URL mode -------------------------------------------------------------------------------

    async def _url(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._say(f"mcpfsm: the server asks you to visit a URL: {shown(params.get('message', ''))}")
        self._say(f"  {shown(params.get('url', ''))}")
        if self._assume_yes:
            self._say("mcpfsm: declined (--yes never consents to a URL; run without --yes to be asked)")
            return {"action": "decline"}
        self._say("  mcpfsm does not open it. Open it yourself if you trust it.")
        answer = await self._choice("  Have you completed it there? [y]es / [N]o (decline) / [c]ancel: ", "n")
        return {"action": answer}

    # --- form mode ------------------------------------------------------------------------------

    async def _form(self, params: Mapping[str, Any]) -> dict[str, Any]:
        schema = params.get("requestedSchema")
        schema = schema if isinstance(schema, Mapping) else {}
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        required = schema.get("required")
        required = {str(name) for name in required} if isinstance(required, list) else set()
        self._say(f"mcpfsm: the server asks: {shown(params.get('message', ''))}")
        if self._assume_yes:
            missing = [name for name in properties if name in required and not _has_default(properties[name])]
            if missing:
                names = ", ".join(shown(name) for name in missing)
                self._say(f"mcpfsm: declined: no default for the required {names} (--yes answers with defaults only)")
                return {"action": "decline"}
            self._say("mcpfsm: accepted with the defaults (--yes)")
            return {"action": "accept", "content": {}}
        answer = await self._choice("  Answer it? [Y]es / [n]o (decline) / [c]ancel: ", "y")
        if answer != "accept":
            return {"action": answer}
        content: dict[str, Any] = {}
        for name, prop in properties.items():
            spec = prop if isinstance(prop, Mapping) else {}
            value = await self._field(str(name), spec, str(name) in required)
            if value is not _OMITTED:
                content[str(name)] = value
        return {"action": "accept", "content": content}

    async def _field(self, name: str, spec: Mapping[str, Any], required: bool) -> Any:
        label = shown(spec.get("title") or name)
        hint = _describe(spec) + (", required" if required else "")
        default = f" [{shown(_default_text(spec))}]" if _has_default(spec) else ""
        prompt = f"  {label} ({hint}){default}: "
        while True:
            text = (await self._ask(prompt)).strip()
            if not text:
                if _has_default(spec) or not required:
                    # Left out: the default, if any, is filled in when the answer is sent (SEP-1034).
                    return _OMITTED
                self._say("    a value is required")
                continue
            try:
                value = _parse(spec, text)
            except ValueError as exc:
                self._say(f"    {exc}")
                continue
            # The property's own rules (minimum, maxLength, format, …): asked again here rather than refused
            # when the whole answer is checked before it is sent.
            from ..._core.input_rounds import form_problems  # with the first form, not with `mcpfsm --help`

            problems = form_problems({"properties": {name: dict(spec)}}, {name: value})
            if not problems:
                return value
            self._say(f"    {shown(problems[0].partition(': ')[2])}")

    # --- terminal I/O ---------------------------------------------------------------------------

    async def _choice(self, prompt: str, default: str) -> str:
        while True:
            text = (await self._ask(prompt)).strip().lower() or default
            if text in _YES:
                return "accept"
            if text in _NO:
                return "decline"
            if text in _CANCEL:
                return "cancel"
            self._say("    answer y, n or c")

    async def _ask(self, prompt: str) -> str:
        write(self._stderr, prompt, end="")
        line = await trio.to_thread.run_sync(self._stdin.readline, abandon_on_cancel=True)
        if not line:
            self._say("")
            raise _Cancelled
        if not self._echoed:
            # A terminal echoes the answer and its line break; piped input does not, so end the line here.
            self._say("")
        return str(line)

    def _say(self, text: str) -> None:
        write(self._stderr, text)


_OMITTED: Final = object()


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _has_default(spec: Any) -> bool:
    return isinstance(spec, Mapping) and "default" in spec


def _default_text(spec: Mapping[str, Any]) -> str:
    value = spec.get("default")
    if isinstance(value, bool):
        return "y" if value else "n"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


def _choices(spec: Mapping[str, Any]) -> list[str] | None:
    options = spec.get("enum")
    if isinstance(options, list):
        return [str(option) for option in options]
    variants = spec.get("oneOf") or spec.get("anyOf")
    if isinstance(variants, list):
        consts = [v.get("const") for v in variants if isinstance(v, Mapping) and "const" in v]
        return [str(const) for const in consts] or None
    return None


def _describe(spec: Mapping[str, Any]) -> str:
    kind = spec.get("type")
    if kind == "array":
        items = spec.get("items")
        choices = _choices(items) if isinstance(items, Mapping) else None
        return "comma-separated" + (f", from: {', '.join(map(shown, choices))}" if choices else "")
    choices = _choices(spec)
    if choices:
        return f"one of: {', '.join(map(shown, choices))}"
    if kind == "boolean":
        return "y/n"
    return str(kind) if isinstance(kind, str) else "text"


def _parse(spec: Mapping[str, Any], text: str) -> Any:
    kind = spec.get("type")
    if kind == "array":
        values = [part.strip() for part in text.split(",") if part.strip()]
        items = spec.get("items")
        choices = _choices(items) if isinstance(items, Mapping) else None
        wrong = [value for value in values if choices is not None and value not in choices]
        if wrong:
            raise ValueError(f"not among the choices: {', '.join(map(shown, wrong))}")
        return values
    choices = _choices(spec)
    if choices is not None and text not in choices:
        raise ValueError(f"choose one of: {', '.join(map(shown, choices))}")
    if kind == "boolean":
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise ValueError("answer y or n")
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise ValueError("a whole number, please") from None
    if kind == "number":
        try:
            number = float(text)
        except ValueError:
            raise ValueError("a number, please") from None
        if not math.isfinite(number):
            raise ValueError("a finite number, please")  # JSON has no nan or infinity
        return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
    return text
