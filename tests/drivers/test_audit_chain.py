"""The chained audit log (``AuditLog(path, chain=True, key=...)``) and ``mcpfsm audit verify``: every kind of
tampering is found at its first line, with and without the HMAC key, and rotation keeps one chain across files."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Final

import pytest

import mcpfsm
from mcpfsm._drivers.audit_log import AuditLog, ChainReport, verify_chain
from mcpfsm._tooling.trace import parse_events
from tests.tooling.recordings import run_mcpfsm as run_cli

KEY: Final = b"an HMAC key of 32 bytes, for me!"


def an_event(seq: int, call: str = "c-1", **fields: Any) -> mcpfsm.CallEvent:
    values: dict[str, Any] = {
        "call_id": call,
        "seq": seq,
        "tool": "echo",
        "state": "resolving" if seq == 0 else "planning",
        "previous": None if seq == 0 else "resolving",
        "trigger": None if seq == 0 else "resolved",
        "attempt": 1,
        "at": "2026-12-01T10:00:00.000000+00:00",
        "elapsed": seq / 1000,
    }
    return mcpfsm.CallEvent(**(values | fields))


def write(path: Path, count: int, key: bytes | None = None, start: int = 0) -> None:
    with AuditLog(path, chain=True, key=key) as log:
        for seq in range(start, start + count):
            log(an_event(seq, call=f"c-{seq // 4}", tool="échec; 漢字"))


def lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def verify(*paths: Path, key: bytes | None = None) -> ChainReport:
    return verify_chain([(str(path), path.read_bytes()) for path in paths], key)


@pytest.mark.parametrize(
    "key", [None, KEY, b"a key longer than SHA-256's block " * 3], ids=["sha256", "hmac", "long-key"]
)
def test_an_untouched_log_is_intact_and_still_reads_as_events(tmp_path: Path, key: bytes | None) -> None:
    path = tmp_path / "audit.jsonl"
    write(path, 6, key)
    report = verify(path, key=key)
    assert (report.intact, report.authenticated, report.lines, report.last_seq) == (True, True, 6, 5)
    assert report.summary() == "intact, 6 lines, last sequence 5"
    records = [json.loads(line) for line in lines(path)]
    assert [record["log_seq"] for record in records] == list(range(6))
    assert records[0]["log_prev"] == "0" * 64
    tag = "log_sha256" if key is None else "log_hmac"
    assert all(list(record)[-1] == tag for record in records)
    assert [record["log_prev"] for record in records[1:]] == [record[tag] for record in records[:-1]]
    # The chain's fields ride along: readers of events (mcpfsm trace) take the lines as they are.
    assert [event.seq for event in parse_events(path.read_text(encoding="utf-8"))] == list(range(6))
    assert KEY.decode() not in path.read_text(encoding="utf-8")


def edit(data: list[bytes]) -> list[bytes]:
    data[2] = data[2].replace(b'"tool":"', b'"tool":"x', 1)
    return data


def delete(data: list[bytes]) -> list[bytes]:
    del data[2]
    return data


def delete_two(data: list[bytes]) -> list[bytes]:
    del data[2:4]
    return data


def insert_copy(data: list[bytes]) -> list[bytes]:
    data.insert(3, data[1])
    return data


def swap(data: list[bytes]) -> list[bytes]:
    data[2], data[3] = data[3], data[2]
    return data


CASES: Final = [
    (edit, "line 3 (sequence 2): edited ("),
    (delete, "line 3 (sequence 3): removed: sequence 2 is missing before this line"),
    (delete_two, "line 3 (sequence 4): removed: sequence 2 to 3 is missing before this line"),
    (insert_copy, "line 4 (sequence 1): inserted: sequence 1 appears twice, at line 2 and here"),
    (swap, "line 3 (sequence 3): reordered: sequence 3 comes where 2 belongs, which comes later"),
]


@pytest.mark.parametrize("key", [None, KEY], ids=["sha256", "hmac"])
@pytest.mark.parametrize(("tamper", "problem"), CASES, ids=[case[0].__name__ for case in CASES])
def test_tampering_is_found_at_its_first_line(tmp_path: Path, key: bytes | None, tamper: Any, problem: str) -> None:
    path = tmp_path / "audit.jsonl"
    write(path, 6, key)
    path.write_bytes(b"".join(tamper(lines(path))))
    report = verify(path, key=key)
    assert not report.intact
    assert report.problem is not None and report.problem.startswith(f"{path}: {problem}"), report.problem
    # Without the key a keyed log is checked for its sequence and links only: an edit that keeps them is
    # invisible there, and the report says it did not authenticate.
    if key is not None and tamper is not edit:
        assert verify(path).problem == report.problem


def test_without_the_key_an_edit_shows_only_as_unauthenticated(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    write(path, 6, KEY)
    path.write_bytes(b"".join(edit(lines(path))))
    report = verify(path)
    assert (report.intact, report.authenticated) == (True, False)
    assert not verify(path, key=KEY).intact
    assert not verify(path, key=b"another key of at least 16 bytes").intact


def test_an_edit_with_a_recomputed_hash_breaks_the_next_link_and_a_forged_hmac_line_fails(tmp_path: Path) -> None:
    import hashlib

    path = tmp_path / "audit.jsonl"
    write(path, 5)
    data = lines(path)
    # Without a key anyone can recompute an edited line's own SHA-256; the next line's log_prev still differs.
    body = data[1][: data[1].rindex(b',"log_sha256":"')].replace(b'"echo', b'"evil', 1)
    body = body.replace(b'"tool":"', b'"tool":"evil', 1)
    data[1] = body + b',"log_sha256":"' + hashlib.sha256(body).hexdigest().encode() + b'"}\n'
    path.write_bytes(b"".join(data))
    assert verify(path).problem == (
        f"{path}: line 2 (sequence 1): edited or replaced (the next line's log_prev does not match it)"
    )
    # With a key the same recomputation is a forgery: a SHA-256 tag where the key's HMAC belongs.
    keyed = tmp_path / "keyed.jsonl"
    write(keyed, 5, KEY)
    data = lines(keyed)
    data[4] = data[4][: data[4].rindex(b",")] + b',"log_sha256":"' + b"0" * 64 + b'"}\n'
    keyed.write_bytes(b"".join(data))
    assert verify(keyed, key=KEY).problem == (
        f"{keyed}: line 5 (sequence 4): tagged with plain SHA-256, not HMAC under the key: inserted or rewritten"
    )


@pytest.mark.parametrize("key", [None, KEY], ids=["sha256", "hmac"])
def test_a_cut_at_the_end_shows_only_against_a_sequence_kept_elsewhere(tmp_path: Path, key: bytes | None) -> None:
    path = tmp_path / "audit.jsonl"
    write(path, 6, key)
    whole = path.read_bytes()
    path.write_bytes(b"".join(lines(path)[:4]))
    report = verify(path, key=key)
    assert (report.intact, report.last_seq) == (True, 3)  # intact: compare last_seq 3 with the 5 kept elsewhere
    path.write_bytes(whole[: len(whole) - 10])  # cut mid-line
    assert verify(path, key=key).problem == (
        f"{path}: line 6: incomplete (no newline at the end): the file was cut mid-line"
    )
    path.write_bytes(b"".join(whole.splitlines(keepends=True)[2:]))  # the start cut: it says where it begins
    report = verify(path, key=key)
    assert (report.intact, report.first_seq) == (True, 2)
    assert report.summary() == (
        "intact, 4 lines, last sequence 5 (first sequence 2: the chain continues an earlier file, not checked)"
    )


def test_rotation_keeps_one_chain_across_files_and_a_reopened_log_continues_it(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path, chain=True, key=KEY) as log:
        for seq in range(3):
            log(an_event(seq))
        log.rotate(tmp_path / "audit.jsonl.1")
        log(an_event(3))
    write(path, 2, KEY, start=4)  # a new process: the chain goes on from the file's last line
    old, new = tmp_path / "audit.jsonl.1", path
    assert [json.loads(line)["log_seq"] for line in lines(new)] == [3, 4, 5]
    assert verify(old, new, key=KEY).summary() == "intact, 6 lines, last sequence 5"
    assert verify(new, old, key=KEY).problem == (
        f"{old}: line 1 (sequence 0): reordered: sequence 0 comes after 5 "
        "(lines moved, or the files given out of order)"
    )
    assert os.stat(new).st_mode & 0o777 == 0o600


def test_bad_keys_and_unchained_files_are_refused_clearly(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^AuditLog: a key signs the chain; pass chain=True with it$"):
        AuditLog(tmp_path / "a.jsonl", key=KEY)
    with pytest.raises(ValueError, match=r"^AuditLog: the key must be bytes, at least 16 of them$"):
        AuditLog(tmp_path / "a.jsonl", chain=True, key=b"short")
    plain = tmp_path / "plain.jsonl"
    with AuditLog(plain) as log:
        log(an_event(0))
    with pytest.raises(ValueError, match=r"is not a chained line \(no log_sha256 or log_hmac tag at its end\)$"):
        AuditLog(plain, chain=True)
    keyed = tmp_path / "keyed.jsonl"
    write(keyed, 2, KEY)
    with pytest.raises(ValueError, match=r"is not signed with HMAC-SHA-256 under this key$"):
        AuditLog(keyed, chain=True, key=b"a different key, 16+ bytes")
    log = AuditLog(keyed, chain=True, key=KEY)
    try:
        assert KEY.decode() not in repr(log) and "keyed" in repr(log)
    finally:
        log.close()


def test_audit_verify_on_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    write(path, 5, KEY)
    key_file = tmp_path / "audit.key"
    key_file.write_bytes(KEY + b"\n")
    done = run_cli("audit", "verify", str(path), "--key-file", str(key_file))
    assert (done.code, done.stdout, done.stderr) == (0, "intact, 5 lines, last sequence 4\n", "")
    done = run_cli("audit", "verify", str(path))
    assert done.code == 2
    assert done.stderr == (
        "mcpfsm: error: the lines carry HMAC-SHA-256 tags: pass --key-file to check them (without the key only the "
        "sequence and the links were checked: 5 lines, last sequence 4)\n"
    )
    path.write_bytes(b"".join(swap(lines(path))))
    done = run_cli("audit", "verify", str(path), "--key-file", str(key_file))
    assert done.code == 9
    assert done.stdout == (
        f"broken: {path}: line 3 (sequence 3): reordered: sequence 3 comes where 2 belongs, which comes later\n"
    )
    done = run_cli("audit", "verify", str(tmp_path / "missing.jsonl"))
    assert done.code == 2 and "cannot read audit log" in done.stderr


# The measuring parent: a small process of its own, since on Linux a process's ru_maxrss starts at its parent's
# peak when it is executed (a child of pytest would report pytest's size); its child's comes from this small one.
# The child runs `mcpfsm audit verify` under a cap on its address space, so that a verifier whose memory grows
# with the square of the log fails at once instead of taking the machine.
MEASURE: Final = """
import json, resource, subprocess, sys

def cap():
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

done = subprocess.run(
    [sys.executable, "-m", "mcpfsm", "audit", "verify", *sys.argv[1:]], capture_output=True, text=True, preexec_fn=cap
)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"code": done.returncode, "out": done.stdout, "err": done.stderr, "peak_kib": peak}))
"""


def peak_of_verify(*paths: Path) -> tuple[int, str, float]:
    """Exit code, output and peak resident memory in MB of ``mcpfsm audit verify PATHS`` in a fresh process."""
    import subprocess
    import sys

    from tests.support.peer.fixtures import REPO_ROOT

    done = subprocess.run(
        [sys.executable, "-c", MEASURE, *map(str, paths)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    measured = json.loads(done.stdout)
    assert measured["code"] in (0, 9), measured["err"][-2000:]
    return measured["code"], measured["out"].rstrip("\n"), measured["peak_kib"] / 1024  # KiB on Linux


def test_verify_runs_in_memory_linear_in_the_log(tmp_path: Path) -> None:
    # 20,000 lines of about 460 bytes, the 8.6 MB or so that took more than 4 GiB before: now the whole process,
    # interpreter and imports included, stays under 100 MB. A tampered line found only at the end needs the
    # second pass, which holds no more.
    path = tmp_path / "audit.jsonl"
    with AuditLog(path, chain=True) as log:
        for seq in range(20_000):
            log(an_event(seq, call=f"c-{seq // 4}"))
    size = path.stat().st_size
    assert 8_000_000 < size < 9_500_000
    code, printed, peak = peak_of_verify(path)
    assert (code, printed) == (0, "intact, 20000 lines, last sequence 19999")
    assert peak < 100, f"{peak:.1f} MB for a {size / 1e6:.1f} MB log"
    moved = lines(path)
    moved[15_000], moved[19_000] = moved[19_000], moved[15_000]
    path.write_bytes(b"".join(moved))
    code, printed, peak = peak_of_verify(path)
    assert code == 9 and printed.startswith(f"broken: {path}: line 15001 (sequence 19000): reordered")
    assert peak < 100, f"{peak:.1f} MB for a {size / 1e6:.1f} MB log"
