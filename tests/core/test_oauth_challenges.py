"""WWW-Authenticate challenges (mcpfsm._core.oauth.challenges; RFC 9110 §11.6.1, RFC 6750 §3, RFC 9728 §5.1,
RFC 9449 §7.1): examples, lenient parsing, and property tests (garbage never raises, challenges round-trip)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpfsm._core import oauth as o
from mcpfsm._core.oauth import BearerChallenge, Challenge


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        pytest.param(
            'Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="a b"',
            BearerChallenge(
                resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope=("a", "b")
            ),
            id="quoted-params",
        ),
        pytest.param('bEaReR error="invalid_token"', BearerChallenge(error="invalid_token"), id="scheme-any-case"),
        pytest.param(
            "Bearer error=insufficient_scope, scope=files:read",
            BearerChallenge(error="insufficient_scope", scope=("files:read",)),
            id="token-values",
        ),
        pytest.param(
            r'Bearer error_description="say \"hi\" \\ now"',
            BearerChallenge(error_description='say "hi" \\ now'),
            id="backslash-escapes",
        ),
        pytest.param(
            'Bearer error_description="a, b=c", scope="x"',
            BearerChallenge(error_description="a, b=c", scope=("x",)),
            id="comma-inside-quotes",
        ),
        pytest.param(
            'Basic realm="x", Bearer scope="s"', BearerChallenge(scope=("s",)), id="second-challenge-one-value"
        ),
        pytest.param(['Basic realm="x"', 'Bearer scope="s"'], BearerChallenge(scope=("s",)), id="second-field-value"),
        pytest.param(
            'Basic realm="a, Bearer scope=no", Bearer scope="yes"',
            BearerChallenge(scope=("yes",)),
            id="scheme-inside-quotes-ignored",
        ),
        pytest.param('Bearer Scope="s" ERROR="e"', BearerChallenge(scope=("s",), error="e"), id="names-any-case"),
        pytest.param(
            'Bearer realm="r", foo=bar, scope="s"', BearerChallenge(scope=("s",)), id="unknown-params-ignored"
        ),
        pytest.param('Bearer scope="", resource_metadata=""', BearerChallenge(), id="empty-means-absent"),
        pytest.param('Bearer scope="  a   b a "', BearerChallenge(scope=("a", "b")), id="scope-whitespace-and-dupes"),
        pytest.param("Bearer", BearerChallenge(), id="no-params"),
        pytest.param('Negotiate abc==, Bearer scope="s"', BearerChallenge(scope=("s",)), id="token68-before"),
        pytest.param('Bearer scope="a", Bearer scope="b"', BearerChallenge(scope=("a",)), id="first-bearer-wins"),
        pytest.param('Bearer scope="a", scope="b"', BearerChallenge(scope=("a",)), id="first-param-wins"),
        pytest.param(
            'Bearer scope = "a" ,error= e', BearerChallenge(scope=("a",), error="e"), id="whitespace-around-eq"
        ),
        pytest.param('Bearer scope="a" error="e"', BearerChallenge(scope=("a",), error="e"), id="missing-comma"),
        pytest.param('Bearer scope="a b', BearerChallenge(scope=("a", "b")), id="unterminated-quote"),
        pytest.param(
            "Bearer resource_metadata=https://h/.well-known/oauth-protected-resource",
            BearerChallenge(resource_metadata="https://h/.well-known/oauth-protected-resource"),
            id="unquoted-url",
        ),
        pytest.param(",, Bearer ,, scope=s,,", BearerChallenge(scope=("s",)), id="empty-list-elements"),
        pytest.param('Basic realm="x"', None, id="no-bearer"),
        pytest.param('Bearerx scope="s"', None, id="other-scheme-prefix"),
        pytest.param("", None, id="empty-value"),
        pytest.param([], None, id="no-values"),
        pytest.param('"Bearer" scope="s"', None, id="quoted-scheme"),
    ],
)
def test_bearer_challenge(values: str | list[str], expected: BearerChallenge | None) -> None:
    assert o.bearer_challenge(values) == expected


def test_dpop_challenge() -> None:
    values = ['Bearer scope="s"', 'DPoP error="use_dpop_nonce", error_description="nonce", algs="ES256 PS256"']
    assert o.bearer_challenge(values, scheme="DPoP") == BearerChallenge(
        error="use_dpop_nonce", error_description="nonce", algs=("ES256", "PS256")
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("Basic/abc==", (Challenge(scheme="Basic"),), id="no-space-before-token68"),
        pytest.param('Basic "x", Bearer', (Challenge(scheme="Basic"), Challenge(scheme="Bearer")), id="quoted-token68"),
        pytest.param("a=b, Bearer", (Challenge(scheme="Bearer"),), id="param-before-any-scheme"),
        pytest.param("Bearer ;x, y=z", (Challenge(scheme="Bearer", params=(("y", "z"),)),), id="junk-element-skipped"),
    ],
)
def test_parse_challenges_lenient(value: str, expected: tuple[Challenge, ...]) -> None:
    assert o.parse_challenges(value) == expected


def test_parse_challenges_whole_value() -> None:
    values = [
        'Newauth realm="apps", type=1, title="Login to \\"apps\\"", Basic realm="simple"',
        "Negotiate abc/+==, Bearer , DPoP algs=ES256",
    ]
    assert o.parse_challenges(values) == (
        Challenge(scheme="Newauth", params=(("realm", "apps"), ("type", "1"), ("title", 'Login to "apps"'))),
        Challenge(scheme="Basic", params=(("realm", "simple"),)),
        Challenge(scheme="Negotiate", token68="abc/+=="),
        Challenge(scheme="Bearer"),
        Challenge(scheme="DPoP", params=(("algs", "ES256"),)),
    )
    assert o.parse_challenges(values)[0].param("TITLE") == 'Login to "apps"'
    assert o.parse_challenges(values)[0].param("missing") is None


@pytest.mark.parametrize(
    "garbage",
    ["=", '"', "\\", '="', 'Bearer ="', 'Bearer a="\\', ", ,", "\x00\x7f", "Bearer \t", "Bearer a=b=c=", "é=ü, Bearer"],
)
def test_garbage_never_raises(garbage: str) -> None:
    o.parse_challenges(garbage)
    o.bearer_challenge(garbage)


@given(st.one_of(st.text(), st.lists(st.text(), max_size=4)))
def test_parser_never_raises(values: str | list[str]) -> None:
    challenges = o.parse_challenges(values)
    assert all(isinstance(challenge, Challenge) for challenge in challenges)
    o.bearer_challenge(values)
    o.bearer_challenge(values, scheme="DPoP")


TCHARS = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
tokens = st.text(TCHARS, min_size=1, max_size=8)
token68s = st.from_regex(r"[A-Za-z0-9\-._~+/]{1,10}={0,2}", fullmatch=True)
values = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E) | st.just("\t"), max_size=12)


@st.composite
def challenges(draw: st.DrawFn) -> tuple[Challenge, str]:
    scheme = draw(tokens)
    if draw(st.booleans()) and draw(st.booleans()):
        token68 = draw(token68s)
        return Challenge(scheme=scheme, token68=token68), f"{scheme} {token68}"
    names = draw(st.lists(tokens, max_size=4, unique_by=str.lower))
    params: list[tuple[str, str]] = []
    rendered: list[str] = []
    for name in names:
        value = draw(values)
        params.append((name.lower(), value))
        if value and all(char in TCHARS for char in value) and draw(st.booleans()):
            rendered.append(f"{name}={value}")
        else:
            escaped = value.replace("\\", "\\\\").replace('"', '\\"')
            rendered.append(f'{name}="{escaped}"')
    text = f"{scheme} {', '.join(rendered)}" if rendered else scheme
    return Challenge(scheme=scheme, params=tuple(params)), text


@given(st.lists(challenges(), min_size=1, max_size=4), st.data())
def test_challenges_round_trip(drawn: list[tuple[Challenge, str]], data: st.DataObject) -> None:
    expected = tuple(challenge for challenge, _ in drawn)
    texts = [text for _, text in drawn]
    assert o.parse_challenges(", ".join(texts)) == expected
    cut = data.draw(st.integers(min_value=0, max_value=len(texts)))
    fields = [", ".join(texts[:cut]), ", ".join(texts[cut:])]
    assert o.parse_challenges(fields) == expected
