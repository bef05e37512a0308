"""``mcpfsm call`` answering elicitation in the terminal, run for real against the test server (official SDK).

Answers go in on stdin (and once through a pseudo-terminal); prompts come out on stderr, the result on stdout.
"""

from __future__ import annotations

import io
import json
import os
import select
import subprocess
import time

import pytest

from mcpfsm._tooling.cli.elicit import TerminalElicitation
from tests.support.clirun import Run, background, command, finished, mcpfsm
from tests.support.peer.fixtures import HttpPeer

LEGACY = "2025-11-25"
ASK_NAME = "mcpfsm: the server asks: What is your name?\n  Answer it? [Y]es / [n]o (decline) / [c]ancel: \n"
NAME_FIELD = "  Name (string, required) [Ada]: \n"
URL_LINES = (
    "mcpfsm: the server asks you to visit a URL: Sign in to continue.\n  https://example.test/sign-in?session=42\n"
)


def structured(run: Run) -> object:
    assert run.code == 0, run.stderr
    return json.loads(run.stdout)["structuredContent"]


@pytest.mark.parametrize("protocol", ["auto", LEGACY])
@pytest.mark.parametrize(
    ("typed", "stderr", "answer"),
    [
        pytest.param(
            "y\nGrace\n", ASK_NAME + NAME_FIELD, {"action": "accept", "content": {"name": "Grace"}}, id="typed"
        ),
        # An empty line keeps the default, which mcpfsm fills in (SEP-1034).
        pytest.param("\n\n", ASK_NAME + NAME_FIELD, {"action": "accept", "content": {"name": "Ada"}}, id="default"),
        pytest.param("n\n", ASK_NAME, {"action": "decline", "content": None}, id="declined"),
        pytest.param(
            "maybe\nc\n",
            ASK_NAME + "    answer y, n or c\n" + ASK_NAME.split("\n")[1] + "\n",
            {"action": "cancel", "content": None},
            id="cancelled",
        ),
        pytest.param(
            "",
            ASK_NAME + "mcpfsm: no answer (end of input): cancelled\n",
            {"action": "cancel", "content": None},
            id="eof",
        ),
    ],
)
def test_call_asks_a_form_on_stderr_and_reads_the_answers_from_stdin(
    peer: HttpPeer, protocol: str, typed: str, stderr: str, answer: object
) -> None:
    run = mcpfsm("call", peer.url, "ask-name", "--compact", "--protocol", protocol, stdin=typed)
    assert structured(run) == answer
    assert run.stderr == stderr


def test_call_parses_each_field_by_its_type_and_asks_again_on_a_bad_value(peer: HttpPeer) -> None:
    typed = "y\nBob\nforty\n41\n\nretired\npending\nn\n"
    run = mcpfsm("call", peer.url, "elicit-defaults", "--compact", "--protocol", LEGACY, stdin=typed)
    assert structured(run) == {
        "action": "accept",
        "content": {"name": "Bob", "age": 41, "score": 95.5, "status": "pending", "verified": False},
    }
    assert run.stderr == (
        "mcpfsm: the server asks: Test client default value handling - please accept with defaults\n"
        "  Answer it? [Y]es / [n]o (decline) / [c]ancel: \n"
        "  name (string) [John Doe]: \n"
        "  age (integer) [30]: \n"
        "    a whole number, please\n"
        "  age (integer) [30]: \n"
        "  score (number) [95.5]: \n"
        "  status (one of: active, inactive, pending) [active]: \n"
        "    choose one of: active, inactive, pending\n"
        "  status (one of: active, inactive, pending) [active]: \n"
        "  verified (y/n) [y]: \n"
    )


def test_call_yes_accepts_the_defaults_without_asking(peer: HttpPeer) -> None:
    run = mcpfsm("call", peer.url, "elicit-defaults", "--compact", "--protocol", LEGACY, "--yes", stdin="")
    assert structured(run) == {
        "action": "accept",
        "content": {"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": True},
    }
    assert run.stderr == (
        "mcpfsm: the server asks: Test client default value handling - please accept with defaults\n"
        "mcpfsm: accepted with the defaults (--yes)\n"
    )


@pytest.mark.parametrize(
    ("options", "typed", "stderr", "action"),
    [
        pytest.param(
            [],
            "y\n",
            URL_LINES
            + "  mcpfsm does not open it. Open it yourself if you trust it.\n"
            + "  Have you completed it there? [y]es / [N]o (decline) / [c]ancel: \n",
            "accept",
            id="consent",
        ),
        pytest.param(
            [],
            "\n",
            URL_LINES
            + "  mcpfsm does not open it. Open it yourself if you trust it.\n"
            + "  Have you completed it there? [y]es / [N]o (decline) / [c]ancel: \n",
            "decline",
            id="no-consent-by-default",
        ),
        pytest.param(
            ["--yes"],
            "",
            URL_LINES + "mcpfsm: declined (--yes never consents to a URL; run without --yes to be asked)\n",
            "decline",
            id="yes-never-consents",
        ),
    ],
)
def test_call_shows_a_url_in_full_and_asks_for_consent(
    peer: HttpPeer, options: list[str], typed: str, stderr: str, action: str
) -> None:
    run = mcpfsm("call", peer.url, "ask-url", "--compact", *options, stdin=typed)
    assert structured(run) == {"action": action}
    assert run.stderr == stderr


def test_a_request_the_cli_cannot_answer_is_one_error_line(peer: HttpPeer) -> None:
    run = mcpfsm("call", peer.url, "ask-model", "--compact", stdin="")
    assert (run.code, run.stdout) == (5, "")
    assert run.stderr == (
        "mcpfsm: error: protocol error: input request 'haiku': no on_sampling handler: "
        "the client did not declare 'sampling/createMessage'\n"
    )


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_call_on_a_terminal_asks_and_reads_the_answers_there(peer: HttpPeer) -> None:
    controller, terminal = os.openpty()
    argv = command("call", peer.url, "ask-name", "--compact")
    with background(argv, stdin=terminal, stdout=subprocess.PIPE, stderr=terminal, text=False) as process:
        os.close(terminal)
        screen = expect(controller, b"[c]ancel: ")
        os.write(controller, b"y\n")
        screen += expect(controller, b"[Ada]: ")
        os.write(controller, b"Grace\n")
        code, out, _ = finished(process)
        stdout = out.decode()
    os.close(controller)
    assert (code, json.loads(stdout)["structuredContent"]) == (0, {"action": "accept", "content": {"name": "Grace"}})
    # The terminal echoes what was typed; mcpfsm adds no line breaks of its own there.
    assert screen.decode().replace("\r\n", "\n") == (
        "mcpfsm: the server asks: What is your name?\n"
        "  Answer it? [Y]es / [n]o (decline) / [c]ancel: y\n"
        "  Name (string, required) [Ada]: "
    )


def expect(fd: int, marker: bytes, timeout: float = 30.0) -> bytes:
    """Read from the pseudo-terminal until ``marker`` was seen (a readiness signal, with a hang guard)."""
    seen = b""
    deadline = time.monotonic() + timeout
    while marker not in seen:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no {marker!r} on the terminal; got {seen!r}"
        if select.select([fd], [], [], remaining)[0]:
            seen += os.read(fd, 4096)
    return seen


async def test_each_field_is_asked_again_until_it_keeps_its_own_rules() -> None:
    # The whole answer is checked against requestedSchema before it is sent; the terminal asks again first.
    schema = {
        "type": "object",
        "properties": {
            "age": {"type": "integer", "minimum": 18},
            "email": {"type": "string", "format": "email"},
            "score": {"type": "number"},
        },
        "required": ["age", "email", "score"],
    }
    stdin = io.StringIO("y\n7\n21\nnot-an-address\nada@example.com\nnan\n2.5\n")
    stderr = io.StringIO()
    ask = TerminalElicitation(stdin=stdin, stderr=stderr)
    answer = await ask({"message": "Who?", "requestedSchema": schema})
    assert answer == {"action": "accept", "content": {"age": 21, "email": "ada@example.com", "score": 2.5}}
    assert stderr.getvalue() == (
        "mcpfsm: the server asks: Who?\n"
        "  Answer it? [Y]es / [n]o (decline) / [c]ancel: \n"
        "  age (integer, required): \n"
        "    the value is less than the minimum of 18\n"
        "  age (integer, required): \n"
        "  email (string, required): \n"
        '    the value is not a "email"\n'
        "  email (string, required): \n"
        "  score (number, required): \n"
        "    a finite number, please\n"
        "  score (number, required): \n"
    )
