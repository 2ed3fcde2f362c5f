"""The bundled sample transcript (ctxlab/data/sample_run.json) and its recorder (tools.sample, not installed).

The committed sample must be long and varied enough for the demo to show both ARS levels (many
tool calls, parallel calls, a long write_file argument) and must not reveal host paths.
Re-recording it must give the same structure: the plan fixes the messages and tool calls; only
tool outputs may differ with the installed package versions.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tools.sample import FORMER_GENERATORS, GENERATOR, MODEL_NAME, SAMPLE_TRANSCRIPT, record_sample

ROLES = {"system", "user", "assistant", "tool"}
#: absolute-path prefixes that must never appear in the committed sample
FORBIDDEN = ("/root/", "/work/", "/tmp/", "/home/", "/site-packages", "/dist-packages")


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _tool_calls(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [tc for m in doc["messages"] for tc in m.get("tool_calls", [])]


def _structure(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Roles, tool-call (id, name) per assistant message, and (tool_call_id, name) per result."""
    return [
        (
            m["role"],
            tuple((tc["id"], tc["function"]["name"]) for tc in m.get("tool_calls", [])),
            m.get("tool_call_id"),
            m.get("name"),
        )
        for m in doc["messages"]
    ]


def _texts(doc: dict[str, Any]) -> list[str]:
    out = []
    for m in doc["messages"]:
        out.append(m.get("content") or "")
        out.extend(tc["function"]["arguments"] for tc in m.get("tool_calls", []))
    return out


@pytest.fixture(scope="module")
def sample() -> dict[str, Any]:
    assert SAMPLE_TRANSCRIPT.is_file(), f"missing bundled sample {SAMPLE_TRANSCRIPT}"
    return _load(SAMPLE_TRANSCRIPT)


def test_sample_is_package_data() -> None:
    assert SAMPLE_TRANSCRIPT.name == "sample_run.json"
    assert SAMPLE_TRANSCRIPT.parent.name == "data"
    assert SAMPLE_TRANSCRIPT.parent.parent.name == "ctxlab"


def test_sample_wrapper_and_message_format(sample: dict[str, Any]) -> None:
    assert sample["model"] == MODEL_NAME
    # recorded before the recorder left the package: it names the recorder's former module
    assert sample["generator"] in (GENERATOR, *FORMER_GENERATORS)
    msgs = sample["messages"]
    assert msgs[0]["role"] == "system"
    assert sum(m["role"] == "user" for m in msgs) >= 3
    assert msgs[-1]["role"] == "assistant" and not msgs[-1].get("tool_calls")
    open_calls: set[str] = set()
    for m in msgs:
        assert m["role"] in ROLES
        assert isinstance(m["content"], str)
        for tc in m.get("tool_calls", []):
            assert tc["type"] == "function"
            assert isinstance(json.loads(tc["function"]["arguments"]), dict)
            open_calls.add(tc["id"])
        if m["role"] == "tool":
            # every result answers a call made before it, exactly once
            assert m["tool_call_id"] in open_calls, m["tool_call_id"]
            open_calls.remove(m["tool_call_id"])
            assert m["name"]
    assert not open_calls, f"calls without a result: {sorted(open_calls)[:5]}"


def test_sample_is_long_and_varied(sample: dict[str, Any]) -> None:
    calls = _tool_calls(sample)
    assert len(calls) >= 150
    assert len({tc["id"] for tc in calls}) == len(calls), "tool-call ids must be unique"
    assert any(len(m.get("tool_calls", [])) >= 2 for m in sample["messages"]), "no parallel tool calls"
    names = {tc["function"]["name"] for tc in calls}
    assert {"read_file", "run_command", "write_file", "edit_file"} <= names
    long_writes = [
        tc
        for tc in calls
        if tc["function"]["name"] == "write_file"
        and len(json.loads(tc["function"]["arguments"])["content"]) > 2000
    ]
    assert long_writes, "no write_file with a >2,000-character argument (R5 would never trigger)"
    results = [len(m["content"]) for m in sample["messages"] if m["role"] == "tool"]
    assert sum(n < 1000 for n in results) >= 150, "too few small tool results"
    assert sum(n > 5000 for n in results) >= 15, "too few large tool results"
    assert sum(len(t) for t in _texts(sample)) > 550_000


def test_sample_reveals_no_host_path(sample: dict[str, Any]) -> None:
    raw = SAMPLE_TRANSCRIPT.read_text(encoding="utf-8")
    for bad in FORBIDDEN:
        assert bad not in raw, f"host path fragment {bad!r} in the sample"


def test_rerecording_gives_the_same_structure(sample: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "again.json"
    doc = record_sample(out)
    assert _load(out) == json.loads(json.dumps(doc))
    assert doc["generator"] == GENERATOR == "tools.sample"
    assert len(doc["messages"]) == len(sample["messages"])
    assert _structure(doc) == _structure(sample)
    # the sanitizer works on this machine too, whatever the package versions
    raw = out.read_text(encoding="utf-8")
    for host in {sys.prefix, str(Path.home()), str(tmp_path), tempfile.gettempdir() + "/"}:
        if host not in ("/", ""):
            assert host not in raw, f"host path {host!r} leaked into the recording"
