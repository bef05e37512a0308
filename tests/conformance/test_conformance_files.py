"""The conformance job's checked-in files, without Node: the expected-failures file names only client scenarios
that a requirement set scores, each once and with a reason, and the adapter's table names only scenarios the suite
runs. `.ci/run` runs the suite itself and checks that scenarios.txt matches the pinned suite's own listing."""

from __future__ import annotations

import re

import pytest

from tests.conformance import adapter
from tests.conformance.expected_failures import (
    EXPECTED_FAILURES,
    ONE_BY_ONE,
    SCENARIOS,
    Entry,
    FormatError,
    judge,
    judge_checks,
    main,
    parse_expected_failures,
    parse_listing,
    problems,
    read_snapshot,
    render_snapshot,
)

SNAPSHOT = read_snapshot(SCENARIOS.read_text(encoding="utf-8"))


def scored(revision: str) -> set[str]:
    return {name for name, status in SNAPSHOT[revision].items() if status == "scored"}


def test_the_expected_failures_file_names_scored_scenarios_once_each_with_a_reason() -> None:
    entries = parse_expected_failures(EXPECTED_FAILURES.read_text(encoding="utf-8"))
    assert problems(entries, SNAPSHOT) == []
    # An empty file stays: with --expected-failures the suite also fails on a WARNING, and the file is where
    # a newly failing scenario would have to be excused, visibly.
    assert all(len(entry.reason) >= 10 for entry in entries), [e.name for e in entries if len(e.reason) < 10]
    assert main([]) == 0


def test_the_snapshot_holds_both_requirement_sets_of_the_pinned_suite() -> None:
    # @modelcontextprotocol/conformance 0.2.0-alpha.12: 18 scored client scenarios for 2025-11-25, 32 for 2026-07-28.
    assert (len(scored("2025-11-25")), len(scored("2026-07-28"))) == (18, 32)
    assert {"initialize", "sse-retry", "elicitation-sep1034-client-defaults"} <= scored("2025-11-25") - scored(
        "2026-07-28"
    )
    assert {"request-metadata", "sep-2322-client-request-state"} <= scored("2026-07-28") - scored("2025-11-25")


def test_the_adapter_table_names_only_scenarios_the_suite_runs() -> None:
    run = set(SNAPSHOT["2025-11-25"]) | set(SNAPSHOT["2026-07-28"]) | set(ONE_BY_ONE)
    assert sorted(set(adapter.SCENARIOS) - run) == []


def test_every_one_by_one_scenario_is_in_no_requirement_set_and_has_its_adapter_steps() -> None:
    # tests/conformance/run checks that the installed suite still lists each as a client extension scenario.
    assert ONE_BY_ONE == (
        "sep-2640-client-no-prefetch",
        "sep-2640-client-verify-digest",
        "sep-2640-client-verify-size",
        "sep-2640-client-verify-frontmatter",
    )
    assert not set(ONE_BY_ONE) & (set(SNAPSHOT["2025-11-25"]) | set(SNAPSHOT["2026-07-28"]))
    assert sorted(set(ONE_BY_ONE) - set(adapter.SCENARIOS)) == []


def check(status: str, name: str = "sep-2640-host-no-prefetch") -> dict[str, object]:
    return {"id": name, "status": status}


def test_one_by_one_runs_pass_only_when_every_check_succeeds() -> None:
    runs = {
        "sep-2640-client-no-prefetch-a": [check("SUCCESS")],
        "sep-2640-client-verify-size-b": [check("INFO", "incoming-request"), check("SUCCESS", "size")],
    }
    assert judge_checks(runs) == ("2 of 2 one-by-one extension scenario runs pass", [])


def test_a_skipped_failed_or_empty_one_by_one_run_fails_ci() -> None:
    # The suite exits 0 on SKIPPED: a client that never listed the skills proved nothing.
    runs = {
        "a-skipped": [check("SKIPPED")],
        "b-failed": [check("SUCCESS", "first"), check("FAILURE", "second")],
        "c-warned": [check("WARNING")],
        "d-empty": [],
        "e-info-only": [check("INFO")],
    }
    assert judge_checks(runs) == (
        "0 of 5 one-by-one extension scenario runs pass",
        [
            "a-skipped: sep-2640-host-no-prefetch=SKIPPED",
            "b-failed: second=FAILURE",
            "c-warned: sep-2640-host-no-prefetch=WARNING",
            "d-empty: no check succeeded",
            "e-info-only: no check succeeded",
        ],
    )


GOOD_HEAD = "# comment\n\nclient:\n  # a group\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("  - tools_call  # why\n", "line 1: expected '  - SCENARIO[:CHECK]  # reason', got '  - tools_call  # why'"),
        (GOOD_HEAD + "  - tools_call\n", "line 5: expected '  - SCENARIO[:CHECK]  # reason', got '  - tools_call'"),
        (GOOD_HEAD + "  - tools_call  #   \n", "line 5: tools_call has no reason after '#'"),
        (GOOD_HEAD + "  - tools_call: tool-add-numbers  # a mapping, not a string\n", "line 5: expected"),
        (GOOD_HEAD + "server:\n", "line 5: expected"),
        ("# only comments\n", "no 'client:' key"),
        ("client: []\n  - tools_call  # why\n", "line 2: nothing may follow 'client: []', got '  - tools_call  # why'"),
    ],
)
def test_malformed_lines_are_refused_with_their_line_number(text: str, message: str) -> None:
    with pytest.raises(FormatError, match=rf"^{re.escape(message)}"):
        parse_expected_failures(text)


def test_an_entry_keeps_its_scenario_check_and_reason() -> None:
    text = GOOD_HEAD + "  - request-metadata:sep-2575-client-retry-supported-version  # not yet\n  - auth/dpop # x\n"
    assert parse_expected_failures(text) == [
        Entry(5, "request-metadata", "sep-2575-client-retry-supported-version", "not yet"),
        Entry(6, "auth/dpop", None, "x"),
    ]


def test_entries_the_suite_would_ignore_or_reject_are_problems() -> None:
    text = GOOD_HEAD + (
        "  - tool_call  # a typo: the suite would silently ignore it\n"
        "  - auth/dpop  # an extension: run, never scored, so never stale\n"
        "  - tools_call  # fine\n"
        "  - tools_call  # twice\n"
        "  - tools_call:tool-add-numbers  # whole and per check\n"
    )
    assert problems(parse_expected_failures(text), SNAPSHOT) == [
        "line 5: tool_call is not a client scenario that 2025-11-25 or 2026-07-28 scores",
        "line 6: auth/dpop is not a client scenario that 2025-11-25 or 2026-07-28 scores",
        "line 8: tools_call is already listed on line 7",
        "line 9: tools_call is listed whole and per check",
    ]


LISTING = """\
Required for 2026-07-28 (4 scenarios, frozen; run at the 2026-07-28 wire):

Server scenarios (test against a server):
  - tools-list

Client scenarios (test against a client):
  - tools_call
  - auth/metadata-default

Run and reported, but never scored:
  extension (2):
    - auth/dpop [client]
    - tasks-lifecycle [server]
  added-after-release (1):
    - json-schema-2020-12-preservation [client]

Required for 2025-11-25 (2 scenarios, frozen; run at the 2025-11-25 wire):

Client scenarios (test against a client):
  - initialize

Run and reported, but never scored:
  pending (1):
    - server-sse-polling [server]
"""


def test_the_suites_listing_becomes_the_snapshot() -> None:
    rows = parse_listing(LISTING)
    assert rows == [
        ("2026-07-28", "scored", "tools_call"),
        ("2026-07-28", "scored", "auth/metadata-default"),
        ("2026-07-28", "extension", "auth/dpop"),
        ("2026-07-28", "added-after-release", "json-schema-2020-12-preservation"),
        ("2025-11-25", "scored", "initialize"),
    ]
    assert read_snapshot(render_snapshot(rows)) == {
        "2025-11-25": {"initialize": "scored"},
        "2026-07-28": {
            "tools_call": "scored",
            "auth/metadata-default": "scored",
            "auth/dpop": "extension",
            "json-schema-2020-12-preservation": "added-after-release",
        },
    }


def test_a_listing_without_both_requirement_sets_is_refused() -> None:
    expected = r"^expected client scenarios for \['2025-11-25', '2026-07-28'\] in the listing$"
    with pytest.raises(FormatError, match=expected):
        parse_listing(LISTING.split("Required for 2025-11-25")[0])


def test_an_empty_list_is_a_file_without_entries() -> None:
    assert parse_expected_failures("# every scenario passes\nclient: []\n") == []


# --- judging one run ----------------------------------------------------------------------------------------

EXTENSIONS = (
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/enterprise-managed-authorization",
    "auth/dpop",
    "auth/dpop-nonce",
    "auth/wif-jwt-bearer",
)


def summary(revision: str, *, failed: tuple[str, ...] = (), missing: tuple[str, ...] = ()) -> str:
    """The suite's summary output for a run of ``revision`` (every scenario it runs, ✓ unless named)."""
    lines = ["=== SUITE SUMMARY ===", ""]
    for name in SNAPSHOT[revision]:
        if name not in missing:
            mark = "\u2717" if name in failed else "\u2713"
            lines.append(f"{mark} {name}: 3 passed, {int(name in failed)} failed")
    return "\n".join([*lines, "", "Total: 3 passed, 0 failed, 0 warnings", ""])


def test_the_snapshot_marks_exactly_the_authorization_extensions_as_required() -> None:
    for revision in ("2025-11-25", "2026-07-28"):
        assert sorted(name for name, status in SNAPSHOT[revision].items() if status == "extension") == sorted(
            EXTENSIONS
        )


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
def test_a_run_where_everything_passes_is_fine(revision: str) -> None:
    verdict, found = judge(revision, summary(revision), SNAPSHOT, [])
    total = len(scored(revision))
    assert (verdict, found) == (
        f"{total} of {total} scored client scenarios pass, 6 of 6 extension scenarios pass",
        [],
    )


@pytest.mark.parametrize("extension", EXTENSIONS)
@pytest.mark.parametrize("how", ["failed", "missing"])
def test_an_extension_scenario_that_stops_passing_fails_ci(extension: str, how: str) -> None:
    # The suite runs them in the --requirements runs but leaves them out of its exit status.
    run = summary("2026-07-28", **{how: (extension,)})
    verdict, found = judge("2026-07-28", run, SNAPSHOT, [])
    assert verdict == "32 of 32 scored client scenarios pass, 5 of 6 extension scenarios pass"
    assert found == [f"2026-07-28: extension scenario {extension} did not pass (unscored by the suite, required by CI)"]


def test_an_extension_failure_cannot_be_excused() -> None:
    entries = [Entry(3, "auth/dpop", None, "would excuse it")]
    _, found = judge("2025-11-25", summary("2025-11-25", failed=("auth/dpop",)), SNAPSHOT, entries)
    assert found == ["2025-11-25: extension scenario auth/dpop did not pass (unscored by the suite, required by CI)"]


def test_a_scored_scenario_must_pass_or_be_listed_whole() -> None:
    run = summary("2025-11-25", failed=("sse-retry",), missing=("initialize",))
    _, found = judge("2025-11-25", run, SNAPSHOT, [])
    assert found == [
        "2025-11-25: scored scenario initialize neither passed nor is listed in expected-failures.yaml",
        "2025-11-25: scored scenario sse-retry neither passed nor is listed in expected-failures.yaml",
    ]
    listed = [Entry(3, "initialize", None, "crashes"), Entry(4, "sse-retry", None, "not yet")]
    assert judge("2025-11-25", run, SNAPSHOT, listed) == (
        "16 of 18 scored client scenarios pass, 6 of 6 extension scenarios pass",
        [],
    )


def test_an_unscored_scenario_that_is_not_an_extension_is_not_required() -> None:
    run = summary("2026-07-28", failed=("json-schema-2020-12-preservation",))
    assert judge("2026-07-28", run, SNAPSHOT, [])[1] == []
