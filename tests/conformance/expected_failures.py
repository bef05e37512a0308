#!/usr/bin/env python3
"""Checks ``expected-failures.yaml`` against the client scenarios the pinned conformance suite scores.

The suite silently ignores an entry that names a scenario it does not run (a typo, a renamed scenario),
so such an entry would excuse nothing and never be reported as stale. This script closes that gap
without Node: ``scenarios.txt`` lists, per requirement set, the client scenarios of the pinned suite.
``tests/conformance/run`` (which ``.ci/run`` runs) rebuilds that list from the installed suite with
``snapshot``, fails when it differs from the checked-in one (after a change of the pin: copy the rebuilt
file it names), then runs ``check``:

    python tests/conformance/expected_failures.py [check]   # exit 1 and one line per problem
    python tests/conformance/expected_failures.py snapshot < LISTING > scenarios.txt
        # LISTING: `conformance list --client --requirements R` for R = 2025-11-25, then 2026-07-28
    python tests/conformance/expected_failures.py judge REVISION SUMMARY
        # SUMMARY: the suite's output for one `--requirements REVISION` run; prints the verdict line,
        # exit 1 and one line per problem on stderr
    python tests/conformance/expected_failures.py one-by-one
        # the extension scenarios that no requirement set lists (ONE_BY_ONE), one name a line
    python tests/conformance/expected_failures.py judge-checks OUTPUT N
        # OUTPUT: the -o directory of N `--scenario` runs; every check of every run must be SUCCESS

``judge`` is what makes CI fail: every scenario the set scores must pass or be listed whole in the
expected-failures file (a client that crashes may leave no failing check behind), and every ``extension``
scenario (the authorization extensions, which the suite runs in the same run but never scores, so their
regressions would pass silently) must pass: the suite ignores expected failures for them, so they cannot be
excused there.

Some extension scenarios are in no requirement set at all (the skills ones, SEP-2640): the suite runs them only
when named with ``--scenario``, and reports a check it could not judge as ``SKIPPED`` while exiting 0. They are
listed in :data:`ONE_BY_ONE`; ``tests/conformance/run`` runs each in both eras and ``judge-checks`` requires every
check of every run to be ``SUCCESS``.

The file's format is the suite's (a ``client:`` list of ``scenario`` or ``scenario:check-id``), held to
a stricter shape that keeps a reason on every line: ``  - NAME  # reason``.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

HERE = Path(__file__).resolve().parent
EXPECTED_FAILURES = HERE / "expected-failures.yaml"
SCENARIOS = HERE / "scenarios.txt"
REQUIREMENT_SETS = ("2025-11-25", "2026-07-28")
UNCATEGORIZED = (None, "scored", "unscored")

_NAME = r"[A-Za-z0-9][A-Za-z0-9_./-]*"
_ENTRY = re.compile(rf"^  - (?P<scenario>{_NAME})(?::(?P<check>[A-Za-z0-9][A-Za-z0-9_.$-]*))? +# *(?P<reason>.*)$")
_SNAPSHOT_HEADER = (
    "# Client scenarios of the pinned MCP conformance suite, per requirement set: REVISION STATUS NAME.\n"
    "# STATUS is `scored`, or why the suite runs the scenario without scoring it. Generated, do not edit:\n"
    "# tests/conformance/run rebuilds it from `conformance list --client --requirements REVISION` and\n"
    "# fails on a difference; after changing the pin, copy the rebuilt file it names over this one.\n"
)


class FormatError(ValueError):
    """A line of ``expected-failures.yaml`` or ``scenarios.txt`` does not have the expected shape."""


@dataclass(frozen=True)
class Entry:
    """One line of the expected-failures file."""

    line: int
    scenario: str
    check: str | None
    reason: str

    @property
    def name(self) -> str:
        """The entry as the suite reads it."""
        return self.scenario if self.check is None else f"{self.scenario}:{self.check}"


def parse_expected_failures(text: str) -> list[Entry]:
    """The entries of an expected-failures file; comments and blank lines aside, nothing else is allowed.

    Raises:
        FormatError: a line is neither a comment, blank, the ``client:`` key nor an entry with a reason.
    """
    entries: list[Entry] = []
    seen_key = empty = False
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line == "client:" and not seen_key:
            seen_key = True
            continue
        if line == "client: []" and not seen_key:
            # Every scenario passes: the suite still reads the file, so a WARNING fails the run.
            seen_key = empty = True
            continue
        if empty:
            raise FormatError(f"line {number}: nothing may follow 'client: []', got {line!r}")
        match = _ENTRY.match(line)
        if not seen_key or match is None:
            raise FormatError(f"line {number}: expected '  - SCENARIO[:CHECK]  # reason', got {line!r}")
        entry = Entry(number, match["scenario"], match["check"], match["reason"].strip())
        if not entry.reason:
            raise FormatError(f"line {number}: {entry.name} has no reason after '#'")
        entries.append(entry)
    if not seen_key:
        raise FormatError("no 'client:' key")
    return entries


def parse_listing(text: str) -> list[tuple[str, str, str]]:
    """``(revision, status, scenario)`` for each client scenario in ``conformance list --client --requirements``.

    Raises:
        FormatError: the listing does not look like the suite's.
    """
    rows: list[tuple[str, str, str]] = []
    revision: str | None = None
    section: str | None = None  # "scored", "unscored", an unscored category, or None (server scenarios)
    for line in text.splitlines():
        if heading := re.match(r"^Required for (\S+) ", line):
            revision, section = heading[1], None
        elif line.startswith("Client scenarios"):
            section = "scored"
        elif line.startswith("Server scenarios"):
            section = None
        elif line.startswith("Run and reported, but never scored"):
            section = "unscored"
        elif (category := re.match(r"^  ([a-z-]+) \(\d+\):$", line)) and section not in (None, "scored"):
            section = category[1]
        elif (entry := re.match(rf"^  - ({_NAME})$", line)) and section == "scored" and revision:
            rows.append((revision, "scored", entry[1]))
        elif (entry := re.match(rf"^    - ({_NAME}) \[client\]$", line)) and section not in UNCATEGORIZED and revision:
            rows.append((revision, str(section), entry[1]))
    if sorted({row[0] for row in rows}) != sorted(REQUIREMENT_SETS):
        raise FormatError(f"expected client scenarios for {list(REQUIREMENT_SETS)} in the listing")
    return rows


def render_snapshot(rows: list[tuple[str, str, str]]) -> str:
    """The text of ``scenarios.txt`` for the rows of :func:`parse_listing`."""
    return _SNAPSHOT_HEADER + "".join(f"{revision} {status} {name}\n" for revision, status, name in rows)


def read_snapshot(text: str) -> dict[str, dict[str, str]]:
    """``{revision: {scenario: status}}`` from the text of ``scenarios.txt``.

    Raises:
        FormatError: a line is not ``REVISION STATUS NAME``.
    """
    table: dict[str, dict[str, str]] = {revision: {} for revision in REQUIREMENT_SETS}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line or line.startswith("#"):
            continue
        fields = line.split(" ")
        if len(fields) != 3 or fields[0] not in table:
            raise FormatError(f"scenarios.txt line {number}: expected 'REVISION STATUS NAME', got {line!r}")
        table[fields[0]][fields[2]] = fields[1]
    return table


def problems(entries: list[Entry], snapshot: dict[str, dict[str, str]]) -> list[str]:
    """Everything wrong with ``entries``; empty when the file is fine.

    An entry must name a client scenario that some requirement set scores (the suite ignores any other,
    so it would never be reported as stale), at most once, and not both whole and per check (the
    suite rejects that).
    """
    found: list[str] = []
    seen: dict[str, int] = {}
    whole = {entry.scenario for entry in entries if entry.check is None}
    for entry in entries:
        if not any(scenarios.get(entry.scenario) == "scored" for scenarios in snapshot.values()):
            sets = " or ".join(snapshot)
            found.append(f"line {entry.line}: {entry.scenario} is not a client scenario that {sets} scores")
        if entry.name in seen:
            found.append(f"line {entry.line}: {entry.name} is already listed on line {seen[entry.name]}")
        seen.setdefault(entry.name, entry.line)
        if entry.check is not None and entry.scenario in whole:
            found.append(f"line {entry.line}: {entry.scenario} is listed whole and per check")
    return found


REQUIRED_UNSCORED: Final = ("extension",)
"""Statuses of unscored scenarios that CI requires to pass all the same."""

_PASSED = re.compile(rf"^\u2713 ({_NAME}):", re.MULTILINE)


def judge(
    revision: str, summary: str, snapshot: dict[str, dict[str, str]], entries: list[Entry]
) -> tuple[str, list[str]]:
    """The verdict line and the problems of one requirement set's run, from the suite's summary output.

    A scored scenario is fine when it passed (a line ``✓ NAME: …``) or is listed whole in the expected-failures
    file; an ``extension`` scenario only when it passed.
    """
    passed = set(_PASSED.findall(summary))
    scenarios = snapshot[revision]
    scored = [name for name, status in scenarios.items() if status == "scored"]
    required = [name for name, status in scenarios.items() if status in REQUIRED_UNSCORED]
    excused = {entry.scenario for entry in entries if entry.check is None}
    found = [
        f"{revision}: scored scenario {name} neither passed nor is listed in {EXPECTED_FAILURES.name}"
        for name in scored
        if name not in passed and name not in excused
    ]
    found += [
        f"{revision}: extension scenario {name} did not pass (unscored by the suite, required by CI)"
        for name in required
        if name not in passed
    ]
    verdict = (
        f"{sum(name in passed for name in scored)} of {len(scored)} scored client scenarios pass,"
        f" {sum(name in passed for name in required)} of {len(required)} extension scenarios pass"
    )
    return verdict, found


ONE_BY_ONE: Final = (
    "sep-2640-client-no-prefetch",
    "sep-2640-client-verify-digest",
    "sep-2640-client-verify-size",
    "sep-2640-client-verify-frontmatter",
)
"""Extension scenarios in no requirement set, run with ``--scenario`` each; every one must pass (SEP-2640 skills)."""

_JUDGED_OK: Final = ("SUCCESS", "INFO")


def judge_checks(runs: dict[str, list[dict[str, object]]]) -> tuple[str, list[str]]:
    """The verdict line and the problems of ``--scenario`` runs: ``{run label: the checks of its checks.json}``.

    A run passes when it has at least one ``SUCCESS`` check and every check is ``SUCCESS`` or ``INFO``: the suite
    exits 0 on a ``SKIPPED`` check (say, a client that never listed the skills), which proves nothing.
    """
    found: list[str] = []
    for label, checks in sorted(runs.items()):
        bad = [f"{check.get('id')}={check.get('status')}" for check in checks if check.get("status") not in _JUDGED_OK]
        if bad or not any(check.get("status") == "SUCCESS" for check in checks):
            found.append(f"{label}: {', '.join(bad) or 'no check succeeded'}")
    return f"{len(runs) - len(found)} of {len(runs)} one-by-one extension scenario runs pass", found


def read_checks(output: Path) -> dict[str, list[dict[str, object]]]:
    """``{run directory name: its checks}`` for every ``*/checks.json`` under a ``-o`` directory.

    Raises:
        FormatError: a checks.json is not a JSON list.
    """
    import json

    runs: dict[str, list[dict[str, object]]] = {}
    for path in sorted(output.glob("*/checks.json")):
        checks = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(checks, list) or not all(isinstance(check, dict) for check in checks):
            raise FormatError(f"{path}: not a list of checks")
        runs[path.parent.name] = checks
    return runs


def main(argv: list[str]) -> int:
    """``check`` (the default), ``snapshot``, ``judge REVISION SUMMARY``, ``one-by-one`` or ``judge-checks OUTPUT N``.

    Returns the exit status.
    """
    if argv == ["snapshot"]:
        sys.stdout.write(render_snapshot(parse_listing(sys.stdin.read())))
        return 0
    if argv == ["one-by-one"]:
        sys.stdout.write("".join(f"{name}\n" for name in ONE_BY_ONE))
        return 0
    if len(argv) == 3 and argv[0] == "judge-checks":
        try:
            runs = read_checks(Path(argv[1]))
        except (FormatError, ValueError) as exc:
            print(f"conformance: {exc}", file=sys.stderr)
            return 1
        expected = int(argv[2])
        verdict, found = judge_checks(runs)
        if len(runs) != expected:
            found.append(f"{len(runs)} runs left checks in {argv[1]}, {expected} expected")
        print(verdict)
        for problem in found:
            print(f"conformance {problem}", file=sys.stderr)
        return 1 if found else 0
    if len(argv) == 3 and argv[0] == "judge" and argv[1] in REQUIREMENT_SETS:
        try:
            entries = parse_expected_failures(EXPECTED_FAILURES.read_text(encoding="utf-8"))
            snapshot = read_snapshot(SCENARIOS.read_text(encoding="utf-8"))
        except FormatError as exc:
            print(f"{EXPECTED_FAILURES.name}: {exc}", file=sys.stderr)
            return 1
        verdict, found = judge(argv[1], Path(argv[2]).read_text(encoding="utf-8"), snapshot, entries)
        print(verdict)
        for problem in found:
            print(f"conformance {problem}", file=sys.stderr)
        return 1 if found else 0
    if argv not in ([], ["check"]):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        entries = parse_expected_failures(EXPECTED_FAILURES.read_text(encoding="utf-8"))
        found = problems(entries, read_snapshot(SCENARIOS.read_text(encoding="utf-8")))
    except FormatError as exc:
        found = [str(exc)]
    for problem in found:
        print(f"{EXPECTED_FAILURES.name}: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
