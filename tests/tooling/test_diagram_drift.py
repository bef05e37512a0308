"""The generated files of every machine match the code: text byte for byte, the SVG by structure.

``mcpfsm diagram`` (mcpfsm._tooling.diagram) draws the machines; ``python -m tooling.diagram`` (the checkout's
tooling/, not shipped) writes those files and the walkthroughs, and its check fails on any of them.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from mcpfsm._machines.registry import MACHINES
from mcpfsm._machines.tool_call import EDGES, STATES, TOOL_CALL
from mcpfsm._tooling import diagram
from mcpfsm._tooling.diagram import REGENERATE_COMMAND, CheckReport, GraphvizNotFound, check_all, svg, write_all
from mcpfsm._tooling.render import banner, dot, expected_structure, mermaid, svg_structure
from tooling import diagram as everything

ROOT = Path(__file__).resolve().parents[2]
INSTALL_GRAPHVIZ = (
    "Graphviz `dot` is not on PATH; install graphviz (e.g. `apt-get install graphviz`, "
    "`brew install graphviz`) to render the SVG diagrams"
)


def require_graphviz() -> None:
    if shutil.which("dot") is None:
        pytest.fail(f"{INSTALL_GRAPHVIZ}; the SVG checks cannot run without it")


def test_every_machine_has_its_four_generated_files() -> None:
    assert everything.generated_paths() == [
        path
        for name in MACHINES
        for path in (f"specs/{name}.mmd", f"specs/{name}.dot", f"diagrams/{name}.svg", f"specs/{name}.md")
    ]
    assert diagram.generated_paths() == [path for path in everything.generated_paths() if not path.endswith(".md")]


@pytest.mark.parametrize("name", list(MACHINES))
def test_committed_text_files_match_the_machine_byte_for_byte(name: str) -> None:
    machine = MACHINES[name]
    hint = f"out of date with the {name} machine; regenerate with: {REGENERATE_COMMAND}"
    assert (ROOT / f"specs/{name}.mmd").read_text(encoding="utf-8") == mermaid(machine), hint
    assert (ROOT / f"specs/{name}.dot").read_text(encoding="utf-8") == dot(machine), hint


@pytest.mark.parametrize("name", list(MACHINES))
def test_committed_svg_shows_the_structure_of_the_machine(name: str) -> None:
    committed = svg_structure((ROOT / f"diagrams/{name}.svg").read_text(encoding="utf-8"))
    assert committed == expected_structure(MACHINES[name]), f"regenerate with: {REGENERATE_COMMAND}"


@pytest.mark.parametrize("name", list(MACHINES))
def test_a_fresh_rendering_has_the_structure_derived_from_the_definition(name: str) -> None:
    require_graphviz()
    machine = MACHINES[name]
    assert svg_structure(svg(dot(machine), banner(machine))) == expected_structure(machine)


def test_the_structure_sees_a_changed_label_a_missing_edge_and_a_renamed_node() -> None:
    committed = (ROOT / "diagrams/tool-call.svg").read_text(encoding="utf-8")
    expected = expected_structure(TOOL_CALL)
    assert svg_structure(committed.replace("[same plan]", "[same plans]", 1)) != expected
    assert svg_structure(committed.replace('class="edge"', 'class="removed"', 1)) != expected
    assert svg_structure(committed.replace("<title>comparing</title>", "<title>compare</title>", 1)) != expected
    # Layout is not structure: moving everything keeps it.
    assert svg_structure(committed.replace('transform="', 'data-x="1" transform="')) == expected


def test_an_svg_that_is_not_xml_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^not an SVG document: "):
        svg_structure("<svg")


def test_mermaid_draws_every_edge_in_order() -> None:
    lines = mermaid(TOOL_CALL).splitlines()
    assert lines[0] == f"%% {banner(TOOL_CALL)}"
    assert lines[1:3] == ["stateDiagram-v2", "    [*] --> resolving"]
    assert [line for line in lines if " : " in line] == [
        f"    {e.source} --> {e.dest} : {e.trigger} [{e.guard}{'' if e.bound is None else '; ' + e.bound}]"
        for e in EDGES
    ]
    loop = "    resending --> awaiting_input : input_required [input_required result; round < max_input_rounds]"
    assert loop in lines
    assert lines[-3:] == ["    succeeded --> [*]", "    failed --> [*]", "    cancelled --> [*]"]


def test_dot_draws_every_edge_and_marks_terminal_states() -> None:
    text = dot(TOOL_CALL)
    edge_lines = [line for line in text.splitlines() if "label=" in line and " -> " in line]
    assert len(edge_lines) == len(EDGES)
    for edge, line in zip(EDGES, edge_lines, strict=True):
        bound = "" if edge.bound is None else f"\\nwhile {edge.bound}"
        assert line.startswith(f'    {edge.source} -> {edge.dest} [label="{edge.trigger}\\n[{edge.guard}]{bound}"')
    # The loop edges are bold and do not pull the layout upwards.
    assert (
        '    retry_resending -> retry_awaiting_input [label="input_required\\n[input_required result]'
        '\\nwhile round < max_input_rounds", style=bold, constraint=false];'
    ) in text.splitlines()
    assert "    succeeded [shape=doublecircle];" in text.splitlines()
    assert "    sending [group=spine];" in text.splitlines()
    # A name longer than a circle holds gets a wider one.
    assert "    retry_awaiting_input [group=spine, width=1.95];" in text.splitlines()
    assert text.startswith(f"// {banner(TOOL_CALL)}\ndigraph tool_call {{\n")
    assert text.endswith("}\n")


def test_svg_is_reproducible_and_names_every_state() -> None:
    require_graphviz()
    first = svg(dot(TOOL_CALL), banner(TOOL_CALL))
    assert first == svg(dot(TOOL_CALL), banner(TOOL_CALL))
    assert "Generated by graphviz" not in first
    assert first.endswith("</svg>\n")
    for state in STATES:
        assert f"<title>{state}</title>" in first


def test_svg_without_graphviz_says_to_install_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GraphvizNotFound, match=r"^Graphviz `dot` is not on PATH; install graphviz \("):
        svg(dot(TOOL_CALL), "title")


def fake_walkthrough(monkeypatch: pytest.MonkeyPatch) -> None:
    # The real walkthrough runs the SDK server (tests/tooling/test_walkthrough.py covers it); here only the files count.
    def walkthrough(name: str) -> Callable[[], str]:
        return lambda: f"# {name}\n"

    monkeypatch.setattr(everything, "_walkthroughs", lambda: {name: walkthrough(name) for name in MACHINES})


def test_write_all_then_check_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_graphviz()
    fake_walkthrough(monkeypatch)
    assert everything.write_all(tmp_path) == [tmp_path / relative for relative in everything.generated_paths()]
    assert everything.write_all(tmp_path) == []
    assert everything.check_all(tmp_path) == CheckReport()
    (tmp_path / "specs/tool-call.mmd").write_text("stateDiagram-v2\n")
    (tmp_path / "diagrams/tool-call.svg").unlink()
    (tmp_path / "specs/task.md").write_text("# task, edited by hand\n")
    assert everything.check_all(tmp_path) == CheckReport(
        drifted=["specs/tool-call.mmd", "diagrams/tool-call.svg", "specs/task.md"]
    )
    # mcpfsm diagram's own check sees the diagrams, not the walkthroughs, and writes only the diagrams.
    assert check_all(tmp_path) == CheckReport(drifted=["specs/tool-call.mmd", "diagrams/tool-call.svg"])
    assert write_all(tmp_path) == [tmp_path / "specs/tool-call.mmd", tmp_path / "diagrams/tool-call.svg"]
    assert everything.check_all(tmp_path) == CheckReport(drifted=["specs/task.md"])


def test_the_repository_s_generated_files_are_up_to_date() -> None:
    # The walkthroughs run real servers; this is the one place the whole check runs against the committed files.
    report = everything.check_all(ROOT)
    assert report.drifted == [], f"out of date: {report.drifted}; regenerate with: {everything.REGENERATE_COMMAND}"
    assert report.skipped == [(f"diagrams/{name}.svg", SKIPPED_SVG) for name in MACHINES if not shutil.which("dot")]


SKIPPED_SVG = "structure checked against the machine; not re-rendered: no Graphviz `dot`"


def test_check_without_graphviz_still_checks_the_svg_structure_and_says_what_it_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_graphviz()
    fake_walkthrough(monkeypatch)
    everything.write_all(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    skipped = [(f"diagrams/{name}.svg", SKIPPED_SVG) for name in MACHINES]
    assert check_all(tmp_path) == CheckReport(skipped=skipped)
    assert everything.check_all(tmp_path) == CheckReport(skipped=skipped)
    svg_path = tmp_path / "diagrams/tool-call.svg"
    svg_path.write_text(svg_path.read_text().replace("[same plan]", "[other]"))
    assert check_all(tmp_path) == CheckReport(drifted=["diagrams/tool-call.svg"], skipped=skipped[1:])


def test_check_without_the_sdk_skips_the_walkthrough_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_graphviz()
    fake_walkthrough(monkeypatch)
    everything.write_all(tmp_path)

    def missing() -> str:
        raise diagram.ComponentMissing("the walkthrough needs the mcp SDK")

    monkeypatch.setattr(everything, "_walkthroughs", lambda: {name: missing for name in MACHINES})
    assert everything.check_all(tmp_path) == CheckReport(
        skipped=[(f"specs/{name}.md", "the walkthrough needs the mcp SDK") for name in MACHINES]
    )
    with pytest.raises(diagram.ComponentMissing, match=r"^the walkthrough needs the mcp SDK$"):
        everything.write_all(tmp_path / "fresh")
    assert not (tmp_path / "fresh").exists()
