"""Skills (SEP-2640, extension ``io.modelcontextprotocol/skills``): entries, verification, frontmatter. Pure: no I/O.

A server that declares the extension lists its skills with ``skills/list`` and answers ``skills/get`` for one;
each entry is a manifest: the URI of the skill's ``SKILL.md``, its YAML frontmatter rendered as a JSON object,
and its files (``resources``: URI, ``sha256:`` digest and byte size of each, or the string ``"dynamic"``). The
files themselves are ordinary resources, read with ``resources/read``. This module holds the rules a host
follows when it reads them (SEP-2640 "Integrity and Verification"), as pure functions over values:

- :func:`parse_entry` validates an entry and raises :class:`~mcpfsm.ProtocolError` naming what is malformed;
- :func:`verify_content` checks a file's bytes against its listed size, then its digest (a size mismatch is a
  failure whether or not the digest is computed);
- :func:`split_frontmatter` parses ``SKILL.md``'s frontmatter with PyYAML and :func:`compare_frontmatter`
  compares it field by field with the entry's (any difference refuses the skill);
- :func:`resolve` turns a path relative to the skill's root (``references/FORMS.md``) into its URI, and a URI
  into its normal form (:func:`normalise`: no dot segments), which the acting window is checked against.

Every refusal is a :class:`SkillVerificationError` naming the check that failed, and the content that failed it
is never handed out.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, NamedTuple

import yaml

from .errors import McpError, ProtocolError

__all__ = [
    "EXTENSION",
    "Check",
    "ParsedEntry",
    "SkillFile",
    "SkillVerificationError",
    "compare_frontmatter",
    "declares_skills",
    "normalise",
    "parse_entry",
    "resolve",
    "root_of",
    "split_frontmatter",
    "verify_content",
]

EXTENSION: Final = "io.modelcontextprotocol/skills"
"""The extension's identifier, under ``capabilities.extensions`` of a server that serves skills (SEP-2640)."""

DYNAMIC: Final = "dynamic"
"""The ``resources`` value of a skill whose content is generated, so that no digests can be published."""

_DIGEST: Final = re.compile(r"^sha256:[0-9a-f]{64}$")
# The Agent Skills format: SKILL.md opens with a `---` line, the YAML, and a closing `---` line (a BOM may lead).
_FRONTMATTER: Final = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_STALE_HINT: Final = "; the entry may be stale: client.skill(uri) gets the current one"
MAX_FRONTMATTER_DEPTH: Final = 64
"""The deepest nesting of collections a frontmatter may have; a deeper one is refused before it is parsed (PyYAML's
parser recurses once per level, so a hostile file could exhaust the stack)."""
_OPENING: Final = (
    yaml.BlockMappingStartToken,
    yaml.BlockSequenceStartToken,
    yaml.FlowMappingStartToken,
    yaml.FlowSequenceStartToken,
)
_CLOSING: Final = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)

Check = Literal["size", "digest", "frontmatter", "unlisted", "dynamic"]
"""What a :class:`SkillVerificationError` says failed."""


class SkillVerificationError(McpError):
    """A skill's file is not what its entry lists (SEP-2640 "Integrity and Verification"); nothing of it is used.

    Attributes:
        check: what failed: ``"size"`` (the byte length differs from the entry's ``size``), ``"digest"`` (the
            SHA-256 differs from the entry's ``digest``), ``"frontmatter"`` (``SKILL.md``'s YAML frontmatter is
            missing, does not parse, or differs from the entry's ``frontmatter``; :attr:`fields` names the
            fields), ``"unlisted"`` (the file is not in the entry's ``resources``) or ``"dynamic"`` (the entry
            publishes no digests and the caller did not accept an unverified skill).
        uri: the URI of the file that failed.
        fields: for ``"frontmatter"``, the fields that differ (empty when the frontmatter itself is unusable).
    """

    def __init__(self, check: Check, uri: str, detail: str, *, fields: tuple[str, ...] = ()) -> None:
        super().__init__(f"skill file {uri}: {check} check failed: {detail}")
        self.check: Check = check
        self.uri = uri
        self.fields = fields


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillFile:
    """One file of a skill as its entry lists it (SEP-2640 ``SkillResource``).

    Attributes:
        uri: the file's resource URI.
        digest: ``sha256:`` and the 64 lowercase hex digits of the SHA-256 of its raw bytes.
        size: its length in bytes.
    """

    uri: str
    digest: str
    size: int


class ParsedEntry(NamedTuple):
    """A valid skill entry: the ``SKILL.md`` URI, the frontmatter, and the files (``None`` when dynamic)."""

    uri: str
    frontmatter: dict[str, Any]
    files: tuple[SkillFile, ...] | None


def declares_skills(capabilities: Mapping[str, Any]) -> bool:
    """True when server ``capabilities`` declare the skills extension (``extensions`` holds :data:`EXTENSION`)."""
    extensions = capabilities.get("extensions")
    return isinstance(extensions, Mapping) and EXTENSION in extensions


def parse_entry(entry: object, what: str) -> ParsedEntry:
    """Validate one ``Skill`` entry of ``skills/list`` or ``skills/get``; ``what`` names it in errors.

    Raises:
        ProtocolError: the entry is not an object; ``uri`` is not a string; ``frontmatter`` is not an object
            with string ``name`` and ``description``; ``resources`` is neither ``"dynamic"`` nor a list of
            objects each with a string ``uri``, a ``sha256:`` ``digest`` and a non-negative integer ``size``
            (SEP-2640: such an entry must not be loaded).
    """
    if not isinstance(entry, dict):
        raise ProtocolError(f"{what} is not an object")
    uri = entry.get("uri")
    if not isinstance(uri, str):
        raise ProtocolError(f'{what} has no string "uri"')
    frontmatter = entry.get("frontmatter")
    if not isinstance(frontmatter, dict):
        raise ProtocolError(f'{what} has no "frontmatter" object')
    for key in ("name", "description"):
        if not isinstance(frontmatter.get(key), str):
            raise ProtocolError(f'{what} "frontmatter" has no string "{key}"')
    resources = entry.get("resources")
    if resources == DYNAMIC:
        return ParsedEntry(uri, frontmatter, None)
    if not isinstance(resources, list):
        raise ProtocolError(f'{what} "resources" is neither a list nor "dynamic"')
    files: list[SkillFile] = []
    for index, item in enumerate(resources):
        where = f"{what} resource #{index}"
        if not isinstance(item, dict) or not isinstance(item.get("uri"), str):
            raise ProtocolError(f'{where} has no string "uri"')
        digest, size = item.get("digest"), item.get("size")
        if not isinstance(digest, str) or not _DIGEST.match(digest):
            raise ProtocolError(f'{where} "digest" is not sha256: and 64 lowercase hex digits')
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ProtocolError(f'{where} "size" is not a non-negative integer')
        files.append(SkillFile(uri=item["uri"], digest=digest, size=size))
    return ParsedEntry(uri, frontmatter, tuple(files))


def verify_content(listed: SkillFile, data: bytes) -> None:
    """Check ``data`` against the entry's ``size``, then its ``digest`` (SEP-2640 "Verification on Read").

    Raises:
        SkillVerificationError: ``"size"`` or ``"digest"``; the content must not be used.
    """
    if len(data) != listed.size:
        detail = f"read {len(data)} bytes, the entry lists {listed.size}{_STALE_HINT}"
        raise SkillVerificationError("size", listed.uri, detail)
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    if digest != listed.digest:
        detail = f"the content hashes to {digest}, the entry lists {listed.digest}{_STALE_HINT}"
        raise SkillVerificationError("digest", listed.uri, detail)


class _FrontmatterLoader(yaml.SafeLoader):
    """PyYAML's safe loader with the scalars JSON can carry: dates stay strings, only true/false are booleans.

    The entry's ``frontmatter`` is the same YAML "rendered verbatim as a JSON object" (SEP-2640), and JSON has no
    date; YAML 1.2's core schema reads ``yes``/``no``/``on``/``off`` as strings, as a server's YAML 1.2 parser does.
    """


_BOOL: Final = "tag:yaml.org,2002:bool"
_TIMESTAMP: Final = "tag:yaml.org,2002:timestamp"
_FrontmatterLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag not in (_BOOL, _TIMESTAMP)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_FrontmatterLoader.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


def split_frontmatter(uri: str, text: str) -> tuple[dict[str, Any], str]:
    """``SKILL.md``'s YAML frontmatter as an object, and the body after it.

    Raises:
        SkillVerificationError: ``"frontmatter"``: there is no ``---`` delimited block at the top, its YAML
            does not parse, or it is not a mapping.
    """
    match = _FRONTMATTER.match(text)
    if match is None:
        raise SkillVerificationError("frontmatter", uri, "SKILL.md does not begin with a --- delimited YAML block")
    try:
        _check_depth(uri, match[1])
        parsed = yaml.load(match[1], Loader=_FrontmatterLoader)  # a SafeLoader: no arbitrary objects
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise SkillVerificationError("frontmatter", uri, f"its YAML does not parse: {problem}") from exc
    except RecursionError:
        # Nesting the token count above did not see (aliases, say) still never escapes as a RecursionError.
        raise SkillVerificationError("frontmatter", uri, "its YAML is nested too deeply") from None
    if not isinstance(parsed, dict):
        raise SkillVerificationError("frontmatter", uri, "its YAML is not a mapping")
    return parsed, text[match.end() :]


def _check_depth(uri: str, yaml_text: str) -> None:
    # PyYAML's scanner reads tokens in a loop (no recursion): the collections opened and not yet closed are the
    # depth the parser would recurse to.
    depth = 0
    for token in yaml.scan(yaml_text, Loader=_FrontmatterLoader):
        if isinstance(token, _OPENING):
            depth += 1
            if depth > MAX_FRONTMATTER_DEPTH:
                raise SkillVerificationError(
                    "frontmatter", uri, f"its YAML nests more than {MAX_FRONTMATTER_DEPTH} collections deep"
                )
        elif isinstance(token, _CLOSING):
            depth -= 1


def compare_frontmatter(uri: str, listed: Mapping[str, Any], parsed: Mapping[Any, Any]) -> None:
    """Compare the file's frontmatter with the entry's, field by field (SEP-2640 "Frontmatter Verification").

    Values compare as JSON values (``1`` is not ``true``); a field absent on one side equals ``null`` on the other.

    Raises:
        SkillVerificationError: ``"frontmatter"`` with :attr:`~SkillVerificationError.fields` naming every field
            that differs.
    """
    keys = list(listed) + [key for key in parsed if key not in listed]
    differ = tuple(str(key) for key in keys if not _same(listed.get(key), parsed.get(key)))
    if differ:
        names = ", ".join(repr(name) for name in differ)
        raise SkillVerificationError("frontmatter", uri, f"field(s) {names} differ from the entry's", fields=differ)


def _same(left: object, right: object) -> bool:
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_same(left[key], right[key]) for key in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(_same(a, b) for a, b in zip(left, right, strict=True))
    return type(left) is type(right) and left == right


def root_of(skill_uri: str) -> str:
    """The skill's root directory: its ``SKILL.md`` URI without ``/SKILL.md`` (SEP-2640 "Resource Mapping")."""
    return skill_uri.rsplit("/", 1)[0]


def normalise(uri: str) -> str:
    """``uri`` without dot segments after ``scheme://`` (RFC 3986 §5.2.4), ``%2E`` counted as a dot.

    The authority counts as the first segment, as a server that joins names reads it: ``skill://s/../x`` is
    ``skill://x``, outside the skill ``s``, never a file of ``s`` (the acting window is checked on this form, and
    this form is what is read). The query and fragment are kept; a text without ``://`` is returned as is.
    """
    scheme, separator, rest = uri.partition("://")
    if not separator:
        return uri
    cut = min((index for index in (rest.find("?"), rest.find("#")) if index >= 0), default=len(rest))
    kept: list[str] = []
    for segment in rest[:cut].split("/"):
        plain = segment.lower().replace("%2e", ".")
        if plain == "..":
            if kept:
                kept.pop()
        elif plain != ".":
            kept.append(segment)
    return f"{scheme}://{'/'.join(kept)}{rest[cut:]}"


def resolve(skill_uri: str, path_or_uri: str) -> str:
    """The URI of ``path_or_uri``: a URI in normal form (:func:`normalise`), or a path against the skill's root.

    ``references/FORMS.md`` in ``skill://pdf-processing/SKILL.md`` is ``skill://pdf-processing/references/FORMS.md``
    (SEP-2640 "Relative References").

    Raises:
        ValueError: the path is empty, absolute, or leads out of the skill's root.
    """
    if "://" in path_or_uri:
        return normalise(path_or_uri)
    path = posixpath.normpath(path_or_uri) if path_or_uri else ""
    if not path or path == "." or path.startswith("/") or path == ".." or path.startswith("../"):
        raise ValueError(f"{path_or_uri!r} is not a path inside the skill {skill_uri}")
    return f"{root_of(skill_uri)}/{path}"
