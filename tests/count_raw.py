"""Count messages, tool calls and call/result pairs straight from the raw transcript files.

This is deliberately independent of :mod:`ctxlab.transcripts`: plain ``json``/``re`` on the raw
structure, with the format chosen by the file's place in its set.  Four sets are counted: the
public set ``../shared/transcripts/raw``, the newer formats in ``../shared/transcripts/wild`` and
``../shared/transcripts/incoming`` (read where they are) and the fixtures in ``tests/data``.  It
writes ``tests/transcript_counts.json`` (``{"raw": {...}, "wild": {...}, "incoming": {...},
"data": {...}}``; a file whose ``runs`` is empty has no conversation and must be refused), which ``tests/test_transcripts*.py`` compare the loaders with::

    .venv/bin/python tests/count_raw.py            # rewrite tests/transcript_counts.json
    .venv/bin/python tests/count_raw.py --check    # exit 1 if the stored file is out of date

Counting rules (the mapping each loader documents, counted on the raw records):

* ``messages`` - messages the run becomes (skipped bookkeeping events not counted);
* ``tool_calls`` - structured tool calls (mini-swe-agent and SWE-agent text mode have none);
* ``pairs`` - tool results whose call id belongs to a call recorded earlier in the run;
* ``orphan_results`` - tool results whose id matches no earlier call;
* ``unanswered_calls`` - calls that no later result answers;
* ``observations`` - tool output recorded as user text (see OBSERVATION_KEY).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RAW = (ROOT / ".." / "shared" / "transcripts" / "raw").resolve()
WILD = (ROOT / ".." / "shared" / "transcripts" / "wild").resolve()
INCOMING = (ROOT / ".." / "shared" / "transcripts" / "incoming").resolve()
DATA = Path(__file__).resolve().with_name("data")
OUT = Path(__file__).with_name("transcript_counts.json")


def counts(messages: int, calls: list[Any], results: list[Any], observations: int = 0) -> dict[str, int]:
    """``calls``: call ids in order; ``results``: ``(result id, ids of calls made before it)``."""
    answered = {rid for rid, before in results if rid in before}
    return {
        "messages": messages,
        "tool_calls": len(calls),
        "pairs": sum(1 for rid, before in results if rid in before),
        "orphan_results": sum(1 for rid, before in results if rid not in before),
        "unanswered_calls": sum(1 for c in calls if c not in answered),
        "observations": observations,
    }


# --- F1 SWE-agent -----------------------------------------------------------------------------


def count_swe_agent(path: Path) -> dict[str, dict[str, int]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    calls: list[str] = []
    results = []
    obs = 0
    seen_assistant = False
    for m in data["history"]:
        if m["role"] == "assistant":
            seen_assistant = True
            calls += [c["id"] for c in m.get("tool_calls") or []]
        elif m["role"] == "tool":
            results.append((m["tool_call_ids"][0], set(calls)))
        elif m["role"] == "user" and seen_assistant:
            obs += 1
    return {path.name: counts(len(data["history"]), calls, results, obs)}


# --- F2 mini-swe-agent ------------------------------------------------------------------------


def count_mini_swe_agent(path: Path) -> dict[str, dict[str, int]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    roles = [m["role"] for m in data["messages"] if m["role"] != "exit"]  # bookkeeping, not sent
    first_ai = roles.index("assistant")
    obs = sum(1 for r in roles[first_ai:] if r == "user")
    return {path.name: counts(len(roles), [], [], obs)}


# --- F3 OpenHands -----------------------------------------------------------------------------

OH_SKIP_ACTIONS = {"change_agent_state", "recall", "condensation", "condensation_request", "null"}
OH_SKIP_OBS = {"agent_state_changed", "null", "recall"}


def _count_openhands_events(events: list[dict[str, Any]]) -> dict[str, int]:
    n = 0
    obs = 0
    calls: list[str] = []
    results = []
    responses: set[str] = set()
    for e in events:
        tcm = e.get("tool_call_metadata")
        if e.get("action"):
            if tcm:
                calls.append(tcm["tool_call_id"])
                rid = (tcm.get("model_response") or {}).get("id")
                if rid not in responses:
                    n += 1
                if rid:
                    responses.add(rid)
            elif e["action"] in OH_SKIP_ACTIONS or e.get("source") == "environment":
                pass
            else:
                n += 1
        elif "observation" in e:
            if tcm:
                n += 1
                results.append((tcm["tool_call_id"], set(calls)))
            elif e["observation"] not in OH_SKIP_OBS:
                n += 1
                obs += 1
    return counts(n, calls, results, obs)


def count_openhands_events(path: Path) -> dict[str, dict[str, int]]:
    return {path.name: _count_openhands_events(json.loads(path.read_text(encoding="utf-8")))}


def count_openhands_eval(path: Path) -> dict[str, dict[str, int]]:
    out = {}
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.strip():
            run = json.loads(line)
            out[run["instance_id"]] = _count_openhands_events(run["history"])
    return out


def count_openhands_resolver(path: Path) -> dict[str, dict[str, int]]:
    """Resolver output lines with flat (pre-V0) events: every action and observation is a
    message, observations as text."""
    out = {}
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.strip():
            run = json.loads(line)
            issue = run["issue"]
            history = run["history"]
            n_obs = sum(1 for e in history if "observation" in e)
            n_act = sum(1 for e in history if "action" in e)
            out[f"{issue['owner']}/{issue['repo']}#{issue['number']}"] = counts(n_obs + n_act, [], [], n_obs)
    return out


# --- F4 / F5 / F6 OpenAI-style message lists --------------------------------------------------


def _count_openai(messages: list[dict[str, Any]]) -> dict[str, int]:
    calls: list[str] = []
    results = []
    for i, m in enumerate(messages):
        if m["role"] == "assistant":
            calls += [c["id"] for c in m.get("tool_calls") or []]
            if m.get("function_call"):
                calls.append(f"fc-{i}")
        elif m["role"] == "tool":
            results.append((m["tool_call_id"], set(calls)))
    return counts(len(messages), calls, results)


def count_openai_chat(path: Path) -> dict[str, dict[str, int]]:
    return {path.name: _count_openai(json.loads(path.read_text(encoding="utf-8")))}


def count_litellm(path: Path) -> dict[str, dict[str, int]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if "raw_messages" in data or "raw_response" in data:  # prompt-based function calling: text only
        reply = data["raw_response"]["choices"][0]["message"]
        msgs = [*data["messages"], {**reply, "role": "assistant"}]
        first_ai = next(i for i, m in enumerate(msgs) if m["role"] == "assistant")
        obs = sum(
            1
            for m in msgs[first_ai:]
            if m["role"] == "user"
            and isinstance(m["content"], str)
            and m["content"].startswith("EXECUTION RESULT of [")
        )
        return {path.name: {**_count_openai(msgs), "observations": obs}}
    response = data["response"]["choices"][0]["message"]
    return {path.name: _count_openai([*data["messages"], {**response, "role": "assistant"}])}


def count_tau_bench(path: Path) -> dict[str, dict[str, int]]:
    return {
        f"task{run['task_id']}-trial{run['trial']}": _count_openai(run["traj"])
        for run in json.loads(path.read_text(encoding="utf-8"))
    }


# --- F7 Claude Code ---------------------------------------------------------------------------


def _claude_side_runs(path: Path) -> dict[str, list[dict[str, Any]]]:
    """The message lines of each sub-agent side file of the session ``path``
    (``<session>/subagents/agent-<id>.jsonl``), keyed ``agent-<agentId>``; the compaction call's
    file (``agent-acompact-*``) is not a run."""
    folder = path.with_suffix("") / "subagents"
    out: dict[str, list[dict[str, Any]]] = {}
    for f in sorted(folder.glob("agent-*.jsonl")) if folder.is_dir() else []:
        if f.name.startswith("agent-acompact-"):
            continue
        recs = [json.loads(x) for x in f.read_text(encoding="utf-8").split("\n") if x.strip()]
        msgs = [
            e for e in recs if e.get("type") in ("user", "assistant") and isinstance(e.get("message"), dict)
        ]
        out[f"agent-{msgs[0]['agentId']}"] = msgs
    return out


def count_claude_code(path: Path) -> dict[str, dict[str, int]]:
    """The main run, then one run per sub-agent, keyed ``agent-<agentId>``: its side file when
    the session folder has one, else its ``isSidechain`` lines and ``agent_progress`` messages
    (the main file's copy).  ``<synthetic>`` assistant lines are messages (kept, marked)."""
    side = _claude_side_runs(path)
    lines: dict[str, list[dict[str, Any]]] = {path.name: []}
    for line in path.read_text(encoding="utf-8").split("\n"):
        if not line.strip():
            continue
        e = json.loads(line)
        data = e.get("data") if isinstance(e.get("data"), dict) else {}
        if e.get("type") == "progress" and data.get("type") == "agent_progress":
            inner = data.get("message")
            key = f"agent-{data.get('agentId') or e.get('parentToolUseID') or 'agent'}"
            if isinstance(inner, dict) and inner.get("type") in ("user", "assistant") and "message" in inner:
                lines.setdefault(key, []).append(inner)
        elif e.get("type") in ("user", "assistant") and isinstance(e.get("message"), dict):
            key = f"agent-{e.get('agentId') or 'sidechain'}" if e.get("isSidechain") else path.name
            lines.setdefault(key, []).append(e)
    lines.update(side)  # the side file is the run; the in-file copy is not a second one
    runs = {key: _count_claude_lines(run) for key, run in lines.items() if run}
    if list(runs) == [k for k in lines if k.startswith("agent-") and lines[k]] and len(runs) == 1:
        return {path.name: next(iter(runs.values()))}  # a sub-agent's own file: a single-run file
    return runs


def _count_claude_lines(lines: list[dict[str, Any]]) -> dict[str, int]:
    n = 0
    last_assistant_id = object()
    calls: list[str] = []
    results = []
    for e in lines:
        content = e["message"]["content"]
        if e["type"] == "assistant":
            mid = e["message"].get("id")
            if mid is None or mid != last_assistant_id:
                n += 1
            last_assistant_id = mid
            if isinstance(content, list):
                calls += [b["id"] for b in content if b["type"] == "tool_use"]
        elif isinstance(content, str):
            n += 1
        else:
            in_text_run = False
            for b in content:
                if b["type"] == "tool_result":
                    n += 1
                    in_text_run = False
                    results.append((b["tool_use_id"], set(calls)))
                elif not in_text_run:
                    n += 1
                    in_text_run = True
    return counts(n, calls, results)


# --- F9 DeerFlow SSE --------------------------------------------------------------------------


def count_deer_flow(path: Path) -> dict[str, dict[str, int]]:
    text = path.read_text(encoding="utf-8")
    events = [(e, json.loads(d)) for e, d in re.findall(r"^event: (\S+)\ndata: (.*)$", text, flags=re.M)]
    # the human-feedback prompt (interrupt) is written by the graph, not a model: not a message
    kinds: dict[str, set[str]] = {}
    for e, d in events:
        kinds.setdefault(d["id"], set()).add(e)
    payloads = [d for e, d in events if kinds[d["id"]] != {"interrupt"}]
    first_seen: list[str] = []
    chunk_ids: dict[str, dict[int, str | None]] = {}
    n_results = 0
    for d in payloads:
        if d["id"] not in first_seen:
            first_seen.append(d["id"])
        for ch in d.get("tool_call_chunks") or []:
            slot = chunk_ids.setdefault(d["id"], {})
            idx = ch.get("index") or 0
            if not slot.get(idx):
                slot[idx] = ch.get("id")
        if "tool_call_id" in d:
            n_results += 1
    result_groups = {d["id"] for d in payloads if "tool_call_id" in d}
    messages = n_results + sum(1 for mid in first_seen if mid not in result_groups)
    calls: list[str] = []
    results = []
    for mid in first_seen:  # in order of first appearance, as the messages are
        calls += [cid for cid in chunk_ids.get(mid, {}).values() if cid]
        for d in payloads:
            if d["id"] == mid and "tool_call_id" in d:
                results.append((d["tool_call_id"], set(calls)))
    n_calls = sum(len(v) for v in chunk_ids.values())
    out = counts(messages, calls, results)
    out["tool_calls"] = n_calls
    return {path.name: out}


# --- F10 Agent TARS events --------------------------------------------------------------------


def count_agent_tars(path: Path) -> dict[str, dict[str, int]]:
    events = json.loads(path.read_text(encoding="utf-8"))
    # the loop's synthetic "... is finished" message is not a model call
    events = [
        e
        for e in events
        if not (e["type"] == "assistant_message" and str(e.get("messageId")).startswith("msg_termination_"))
    ]
    kinds = Counter(e["type"] for e in events)
    calls: list[str] = []
    results = []
    for e in events:
        if e["type"] == "assistant_message":
            calls += [c["id"] for c in e.get("toolCalls") or []]
        elif e["type"] == "tool_result":
            results.append((e["toolCallId"], set(calls)))
    n = kinds["user_message"] + kinds["assistant_message"] + kinds["tool_result"]
    return {path.name: counts(n, calls, results)}


# --- F13 OpenCode Markdown --------------------------------------------------------------------

TOOL_BLOCK = re.compile(
    r"^```\nTool: (?P<name>[^\n]*)\n\n\*\*Input:\*\*\n```json\n.*?\n```\n"
    r"(?:\*\*(?P<kind>Output|Error):\*\*\n```\n.*?\n```\n)?```$",
    flags=re.S | re.M,
)


def count_opencode(path: Path) -> dict[str, dict[str, int]]:
    text = path.read_text(encoding="utf-8")
    sections = re.split(r"\n---\n\n(?=## User\n|## Assistant \()", text)[1:]
    n = 0
    calls: list[str] = []
    results = []
    for sec in sections:
        if sec.startswith("## User"):
            n += 1
            continue
        body = sec.split("\n", 1)[1] if "\n" in sec else ""
        groups = 0  # AI messages: one per run of tool blocks, plus prose after the last run
        pos = 0
        for m in TOOL_BLOCK.finditer(body):
            if groups == 0 or body[pos : m.start()].strip():
                groups += 1
            call_id = f"call{len(calls) + 1}"
            calls.append(call_id)
            n += 1  # its output, or the empty output the export leaves out
            results.append((call_id, set(calls)))
            pos = m.end()
        rest = re.sub(r"\n---\s*\Z", "", body[pos:])
        if groups == 0 or rest.strip():
            groups += 1
        n += groups
    return {path.name: counts(n, calls, results)}


# --- F14 Codex CLI rollouts / OpenAI Responses item lists -------------------------------------

OUTPUT_ITEMS = {"reasoning", "function_call", "custom_tool_call", "local_shell_call", "computer_call"}


def _count_items(items: list[dict[str, Any]], n: int = 0) -> dict[str, int]:
    """One message per input item; one per run of model output items between inputs."""
    calls: list[str] = []
    results = []
    in_output = False
    for it in items:
        kind = it.get("type") or "message"
        is_output = (
            kind in OUTPUT_ITEMS
            or kind.endswith("_search_call")
            or (kind == "message" and it["role"] == "assistant")
        )
        if is_output:
            n += 0 if in_output else 1
            in_output = True
            if kind.endswith("_call") and "call_id" in it:
                calls.append(it["call_id"])
        elif kind == "message" or kind.endswith("_output"):
            n += 1
            in_output = False
            if kind.endswith("_output"):
                results.append((it["call_id"], set(calls)))
    return counts(n, calls, results)


def count_codex(path: Path) -> dict[str, dict[str, int]]:
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").split("\n") if x.strip()]
    items = [x["payload"] for x in lines if x["type"] == "response_item"]
    base = [x for x in lines if x["type"] == "session_meta" and "base_instructions" in x["payload"]]
    return {path.name: _count_items(items, n=len(base[:1]))}


def count_responses(path: Path) -> dict[str, dict[str, int]]:
    return {path.name: _count_items(json.loads(path.read_text(encoding="utf-8")))}


# --- F15 Aider chat history -------------------------------------------------------------------


AIDER_UI = (
    "Tokens:", "Cost:", "Applied edit to ", "Did not apply edit", "Commit ", "Committing ",
    "You can use /undo", "No changes made to git", "Edit the files?", "Attempt to fix ", "Create new file?",
    "Allow edits to ", "Run shell command", "The LLM did not conform", "https://aider.chat", "Warning: ",
    "^C again to exit",
)  # fmt: skip


def _aider_ui(line: str) -> bool:
    """A console line only the user sees (Aider prints it, sends it to no model)."""
    line = line.strip()
    return (
        line.startswith(AIDER_UI)
        or (line.startswith("Add ") and " to the chat?" in line)
        or bool(re.fullmatch(r"Added \d+ lines? of output to the chat\.?", line))
        or bool(re.fullmatch(r"Only \d+ reflections allowed, stopping\.?", line))
    )


def _aider_sent(lines: list[str]) -> bool:
    """Whether a console block after a reply sent the model anything (an observation)."""
    if any(re.fullmatch(r"Only \d+ reflections allowed, stopping\.?", x.strip()) for x in lines):
        return False
    for k, x in enumerate(lines):
        nxt = lines[k + 1].strip() if k + 1 < len(lines) else ""
        lone = x.strip() and " " not in x.strip() and _aider_ui(nxt) and "?" in nxt
        if x.strip() and not _aider_ui(x) and not lone:
            return True
    return False


def _aider_blocks(text: str) -> list[tuple[str, list[str]]]:
    """(kind, lines): session / user (#### lines) / console (> lines) / reply; a blank line ends a
    user block; lines inside a fence of a reply are the reply's; a reply run that follows a
    console block and runs into the next console line (no blank line, last line ending with two
    spaces) is that console message's continuation."""
    out: list[tuple[str, list[str]]] = []
    fence = False
    for raw in text.split("\n"):
        kind = out[-1][0] if out else None
        if kind == "reply" and fence and not raw.startswith("# aider chat started at"):
            out[-1][1].append(raw)
            fence = not raw.lstrip().startswith("```")
            continue
        fence = False
        if raw.startswith("# aider chat started at"):
            out.append(("session", [raw]))
        elif raw == "####" or raw.startswith("#### "):
            line = raw[5:].removesuffix("  ")
            if kind == "user":
                out[-1][1].append(line)
            else:
                out.append(("user", [line]))
        elif raw == ">" or raw.startswith("> "):
            line = raw[2:].removesuffix("  ")
            if kind == "reply" and len(out) > 1 and out[-2][0] == "console" and out[-1][1][-1].endswith("  "):
                out[-2][1].extend(out.pop()[1])
                kind = "console"
            if kind == "console":
                out[-1][1].append(line)
            else:
                out.append(("console", [line]))
        elif not raw.strip():
            if kind == "reply":
                out[-1][1].append(raw)
            elif kind == "user":
                out.append(("gap", []))
        else:
            if kind != "reply":
                out.append(("reply", []))
            out[-1][1].append(raw)
            fence = raw.lstrip().startswith("```")
    return [b for b in out if b[0] != "gap"]


def count_aider(path: Path) -> dict[str, dict[str, int]]:
    """Sessions split at /clear; user text (not /commands but /ask ...), replies, and console
    blocks after a reply (or an added /run output) that hold anything but Aider's own lines as
    observations.  An architect's reply re-sent as the next user input is an editor run of its
    own (its key ``<run>.editor<k>``), and the architect run then gets Aider's two made-up turns
    ("I made those changes to the files." / "Ok.")."""
    runs: list[tuple[str, list[str], list[list[str]]]] = []  # (key, kinds H/A/O, editor runs' kinds)
    session, part = 0, 0
    cur: list[str] = []
    editors: list[list[str]] = []
    editor: list[str] | None = None
    prev = "start"
    last_reply = ""

    def plain(lines: list[str]) -> str:
        return "\n".join(x.rstrip() for x in "\n".join(lines).split("\n")).strip()

    def close_editor() -> None:
        nonlocal editor
        if editor is not None:
            cur.extend(["H", "A"])
        editor = None

    def close_run() -> None:
        close_editor()
        runs.append((f"session{session}" + (f".{part + 1}" if part else ""), list(cur), list(editors)))

    for kind, lines in _aider_blocks(path.read_text(encoding="utf-8")):
        target = editor if editor is not None else cur
        if kind == "session":
            close_run()
            cur, editors, prev, last_reply = [], [], "start", ""
            session, part = session + 1, 0
        elif kind == "user":
            body = "\n".join(lines).strip("\n")
            if (
                editor is None
                and prev in ("reply", "console")
                and cur
                and cur[-1] == "A"
                and plain(lines) == last_reply
            ):
                editor = ["H"]
                editors.append(editor)
                prev = "user"
                continue
            close_editor()
            cmd = re.match(r"/(\w+)\s*(.*)", body, re.S) if body.startswith("/") else None
            if body.startswith("!"):
                prev = "cmd:run"
            elif cmd is None:
                cur.append("H")
                prev = "user"
            elif cmd.group(1) in ("clear", "reset"):
                close_run()
                cur, editors = [], []
                part += 1
                prev = "cmd"
            elif cmd.group(1) in ("ask", "code", "architect", "context") and cmd.group(2).strip():
                cur.append("H")
                prev = "user"
            else:
                prev = "cmd:" + cmd.group(1)
        elif kind == "reply":
            target.append("A")
            if editor is None:
                last_reply = plain(lines)
            prev = "reply"
        else:
            body = "\n".join(lines)
            added = re.search(
                r"(?m)^(Add .* to the chat\?.*:\s*y|Added \d+ lines? of output to the chat)", body
            )
            if (prev == "reply" and _aider_sent(lines)) or (prev in ("cmd:run", "cmd:test") and added):
                target.append("O")
                prev = "obs"
            elif prev == "reply":
                prev = "console"
    close_run()
    found = [(key, r, eds) for key, r, eds in runs if r]
    out = {}
    for key, r, eds in found:
        name = path.name if len(found) == 1 else key
        out[name] = counts(len(r), [], [], r.count("O"))
        for k, e in enumerate(eds, 1):
            out[f"{name}.editor{k}"] = counts(len(e), [], [], e.count("O"))
    return out


# --- Gemini CLI sessions ----------------------------------------------------------------------


def count_gemini(path: Path) -> dict[str, dict[str, int]]:
    n = 0
    calls: list[str] = []
    results = []
    for m in json.loads(path.read_text(encoding="utf-8"))["messages"]:
        if m["type"] == "user":
            n += 1
        elif m["type"] == "gemini":
            stamps = [c["timestamp"] for c in m.get("toolCalls") or []]
            n += max(1, sum(1 for i, t in enumerate(stamps) if i == 0 or t != stamps[i - 1]))
            for c in m.get("toolCalls") or []:
                calls.append(c["id"])
                if c.get("result"):
                    n += 1
                    results.append((c["id"], set(calls)))
    if n == 0:  # only UI notices: the file is refused, it has no run
        return {}
    return {path.name: counts(n, calls, results)}


# --- Anthropic Messages API lists -------------------------------------------------------------


CLINE_HEADER = re.compile(r"\[[A-Za-z0-9_.:-]+(?: for '.*?')?\] Result:", re.S)


def _kind(b: dict[str, Any]) -> str:
    """R: tool_result block; C: a Cline/Roo text result header; E: environment details; T: other."""
    if b["type"] == "tool_result":
        return "R"
    text = b.get("text", "").lstrip() if b["type"] == "text" else ""
    if CLINE_HEADER.match(text):
        return "C"
    return "E" if text.startswith("<environment_details>") else "T"


def count_anthropic(path: Path) -> dict[str, dict[str, int]]:
    """Anthropic message lists; Cline/Roo text results (a header block and the blocks after it up
    to the next header or environment details) answer the earliest pending call of their tool
    name, else the earliest pending call, else are observations."""
    n = obs = 0
    calls: list[tuple[str, str]] = []  # (id, name)
    pending: list[tuple[str, str]] = []
    results = []
    for m in json.loads(path.read_text(encoding="utf-8")):
        content = m["content"]
        if m["role"] == "assistant":
            n += 1
            new = [
                (b["id"], b["name"]) for b in content if isinstance(content, list) and b["type"] == "tool_use"
            ]
            calls += new
            pending += new
        elif isinstance(content, str):
            n += 1
        else:
            kinds = "".join(_kind(b) for b in content)
            pos = 0
            for piece in re.findall(r"R|CT*|[ET]+", kinds):
                n += 1
                block = content[pos]
                pos += len(piece)
                if piece == "R":
                    rid = block["tool_use_id"]
                elif piece[0] == "C":
                    name = block["text"].lstrip()[1:].split("]")[0].split(" for ")[0]
                    match = [c for c in pending if c[1] == name] or pending[:1]
                    if not match:
                        obs += 1
                        continue
                    rid = match[0][0]
                else:
                    continue
                results.append((rid, {c for c, _ in calls}))
                pending = [c for c in pending if c[0] != rid]
    return {path.name: counts(n, [c for c, _ in calls], results, obs)}


# --- F18 Kimi CLI, F19 Inspect AI, F20 ShareGPT -----------------------------------------------


def count_kimi(path: Path) -> dict[str, dict[str, int]]:
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").split("\n") if x.strip()]
    return {path.name: _count_openai([r for r in rows if not r["role"].startswith("_")])}


def _count_inspect_sample(sample: dict[str, Any]) -> dict[str, int]:
    calls: list[str] = []
    results = []
    for m in sample["messages"]:
        if m["role"] == "assistant":
            calls += [c["id"] for c in m.get("tool_calls") or []]
        elif m["role"] == "tool":
            results.append((m["tool_call_id"], set(calls)))
    return counts(len(sample["messages"]), calls, results)


def count_inspect(path: Path) -> dict[str, dict[str, int]]:
    if path.suffix == ".eval":
        import zipfile

        with zipfile.ZipFile(path) as zf:
            samples = [json.loads(zf.read(n)) for n in sorted(zf.namelist()) if n.startswith("samples/")]
    else:
        samples = json.loads(path.read_text(encoding="utf-8"))["samples"]
    return {f"{s['id']}-epoch{s['epoch']}": _count_inspect_sample(s) for s in samples}


def count_sharegpt(path: Path) -> dict[str, dict[str, int]]:
    out = {}
    for i, row in enumerate(json.loads(path.read_text(encoding="utf-8"))):
        calls: list[str] = []
        results = []
        waiting: list[str] = []
        n = 1 if row.get("system") else 0
        for turn in row["conversations"]:
            n += 1
            if turn["from"] == "function_call":
                value = json.loads(turn["value"])
                for _ in value if isinstance(value, list) else [value]:
                    calls.append(f"c{len(calls)}")
                    waiting.append(calls[-1])
            elif turn["from"] == "observation":
                rid = waiting.pop(0) if waiting else "none"
                results.append((rid, set(calls)))
        out[f"row{i}"] = counts(n, calls, results)
    return out


# --- LangSmith run exports (langchain_core.load serialized messages) ---------------------------


def _lc_key(m: dict[str, Any]) -> tuple[str, tuple[str, ...], str]:
    kw = m["kwargs"]
    ids = tuple(c["id"] for c in kw.get("tool_calls") or []) + (
        (kw["tool_call_id"],) if "tool_call_id" in kw else ()
    )
    content = kw.get("content")
    text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content or [])
    return m["id"][-1], ids, text.strip()


def count_langsmith(path: Path) -> dict[str, dict[str, int]]:
    """One conversation per chat-model run (prompt + answer); runs repeating the start of a
    longer one are the same conversation."""
    convs = []
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.strip():
            run = json.loads(line)
            convs.append([*run["inputs"]["messages"][0], run["outputs"]["generations"][0][0]["message"]])
    keys = [[_lc_key(m) for m in c] for c in convs]
    longest = [
        c
        for i, c in enumerate(convs)
        if not any(len(o) > len(keys[i]) and o[: len(keys[i])] == keys[i] for o in keys)
    ]
    out = {}
    for c in longest:
        calls: list[str] = []
        results = []
        for m in c:
            calls += [tc["id"] for tc in m["kwargs"].get("tool_calls") or []]
            if m["id"][-1] == "ToolMessage":
                results.append((m["kwargs"]["tool_call_id"], set(calls)))
        out[path.name] = counts(len(c), calls, results)
    return out


def count_langgraph_trace(path: Path) -> dict[str, dict[str, int]]:
    """A LangSmith export of LangGraph traces (one run per line): per trace, the root run's
    ``outputs.messages`` (the graph's final state) is the conversation; node outputs and model
    calls are parts of it."""
    runs = [json.loads(x) for x in path.read_text(encoding="utf-8").split("\n") if x.strip()]
    roots = [r for r in runs if r.get("parent_run_id") is None]
    out = {}
    for root in roots:
        msgs = root["outputs"]["messages"]
        calls: list[str] = []
        results = []
        for m in msgs:
            calls += [tc["id"] for tc in m["kwargs"].get("tool_calls") or []]
            if m["id"][-1] == "ToolMessage":
                results.append((m["kwargs"]["tool_call_id"], set(calls)))
        out[path.name if len(roots) == 1 else f"trace-{root['trace_id']}"] = counts(len(msgs), calls, results)
    return out


# --- issue 29: Gemini contents, headless streams, ATIF, PydanticAI, smolagents, SpecStory -----


def count_gemini_contents(path: Path) -> dict[str, dict[str, int]]:
    """A model content is one message (its functionCall parts its calls, made-up ids when they
    have none); a user content gives a result per functionResponse (its id, else the earliest
    unanswered call of its name) and one message when it has text."""
    n = 0
    calls: list[str] = []
    pending: list[tuple[str, str]] = []
    results = []
    for i, c in enumerate(json.loads(path.read_text(encoding="utf-8"))):
        if c["role"] == "model":
            n += 1
            for j, p in enumerate(c["parts"]):
                if "functionCall" in p:
                    cid = p["functionCall"].get("id") or f"call{i}.{j}"
                    calls.append(cid)
                    pending.append((cid, p["functionCall"]["name"]))
            continue
        for p in c["parts"]:
            if "functionResponse" in p:
                fr = p["functionResponse"]
                rid = fr.get("id") or next((cid for cid, name in pending if name == fr["name"]), "none")
                pending = [x for x in pending if x[0] != rid]
                n += 1
                results.append((rid, set(calls)))
        n += any("text" in p and not p.get("thought") for p in c["parts"])
    return {path.name: counts(n, calls, results)}


def count_claude_stream(path: Path) -> dict[str, dict[str, int]]:
    """Message lines with ``parent_tool_use_id`` null are the main run, the others the sub-agent
    run of that Task call (``agent-<id>``); counted as Claude Code session lines are."""
    runs: dict[str, list[dict[str, Any]]] = {path.name: []}
    for x in (json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()):
        if x["type"] in ("user", "assistant"):
            key = f"agent-{x['parent_tool_use_id']}" if x.get("parent_tool_use_id") else path.name
            runs.setdefault(key, []).append(x)
    return {key: _count_claude_lines(r) for key, r in runs.items() if r}


def count_codex_exec(path: Path) -> dict[str, dict[str, int]]:
    """Completed items in order: text items open (or join) a model message; a tool item joins
    it unless a result came since (then it opens a new one) and adds its result."""
    n = 0
    calls: list[str] = []
    results = []
    open_msg = False
    since_result = False
    for line in path.read_text(encoding="utf-8").split("\n"):
        if not line.strip() or (x := json.loads(line))["type"] != "item.completed":
            continue
        item = x["item"]
        if item["type"] in ("agent_message", "reasoning"):
            if not open_msg or since_result:
                n += 1
                open_msg, since_result = True, False
        elif item["type"] in ("command_execution", "mcp_tool_call", "file_change", "web_search"):
            if not open_msg or since_result:
                n += 1
                open_msg, since_result = True, False
            cid = f"{item['id']}@{len(calls)}"
            calls.append(cid)
            n += 1
            results.append((cid, set(calls)))
            since_result = True
    return {path.name: counts(n, calls, results)}


def count_pydantic_ai(path: Path) -> dict[str, dict[str, int]]:
    n = 0
    calls: list[str] = []
    results = []
    system = False
    for msg in json.loads(path.read_text(encoding="utf-8")):
        if msg["kind"] == "response":
            n += 1
            calls += [p["tool_call_id"] for p in msg["parts"] if p["part_kind"] == "tool-call"]
            continue
        for p in msg["parts"]:
            if p["part_kind"] == "system-prompt":
                n += not system
                system = True
            elif p["part_kind"] == "user-prompt":
                n += 1
            elif p["part_kind"] in ("tool-return", "retry-prompt"):
                n += 1
                if p["part_kind"] == "tool-return" or p.get("tool_name"):
                    results.append((p["tool_call_id"], set(calls)))
    return {path.name: counts(n, calls, results)}


def count_smolagents(path: Path) -> dict[str, dict[str, int]]:
    """System prompt, tasks, one model message per action/planning step, plus its observations
    and error as user text."""
    n = obs = 0
    for step in json.loads(path.read_text(encoding="utf-8")):
        if "system_prompt" in step or ("task" in step and "step_number" not in step) or "plan" in step:
            n += 1
        elif "step_number" in step:
            extra = (step.get("observations") is not None) + (step.get("error") is not None)
            n += 1 + extra
            obs += extra
    return {path.name: counts(n, [], [], obs)}


def count_atif(path: Path) -> dict[str, dict[str, int]]:
    """One message per system/user step; per agent step one message, its calls when a result
    names one (else the step is text mode: no calls), and a message per result."""
    n = obs = 0
    calls: list[str] = []
    results = []
    for step in json.loads(path.read_text(encoding="utf-8"))["steps"]:
        n += 1
        if step["source"] != "agent":
            continue
        res = (step.get("observation") or {}).get("results") or []
        if any(r.get("source_call_id") for r in res):
            calls += [c["tool_call_id"] for c in step.get("tool_calls") or []]
        for r in res:
            n += 1
            if r.get("source_call_id"):
                results.append((r["source_call_id"], set(calls)))
            else:
                obs += 1
    return {path.name: counts(n, calls, results, obs)}


def count_specstory(path: Path) -> dict[str, dict[str, int]]:
    """Sections between ``---`` lines; a user section is a message; in agent sections each text
    run opens a model message unless no tool result came since, each tool use joins the open
    model message unless a result came since and adds its result."""
    n = 0
    calls: list[str] = []
    results = []
    speaker = None
    open_msg = False
    since_result = False
    text = path.read_text(encoding="utf-8")
    for sec in re.split(r"\n---\n|\n(?=_\*\*(?:User|Agent|Assistant)\b)", text):
        sec = sec.strip()
        head = re.match(r"_\*\*(User|Agent|Assistant)[^*]*\*\*_", sec)
        if head:
            speaker = "user" if head.group(1) == "User" else "agent"
            sec = sec[head.end() :].strip()
            open_msg = False
        if not sec or speaker is None:
            continue
        if speaker == "user":
            n += 1
            continue
        for tool in re.finditer(
            r"<tool-use\b[\s\S]*?</tool-use>|(?P<text>[^<][\s\S]*?)(?=<tool-use\b|\Z)", sec
        ):
            if tool.group("text") is not None:
                if not tool.group("text").strip():
                    continue
                if not open_msg or since_result:
                    n += 1
                    open_msg, since_result = True, False
                continue
            if not open_msg or since_result:
                n += 1
                open_msg, since_result = True, False
            calls.append(f"c{len(calls)}")
            n += 1
            results.append((calls[-1], set(calls)))
            since_result = True
    return {path.name: counts(n, calls, results)}


def count_openhands_v1(path: Path) -> dict[str, dict[str, int]]:
    """A conversation folder: its events/ files in name order; the action events of one
    llm_response_id are one model message, every observation / error / rejection a result."""
    events = [
        json.loads(f.read_text(encoding="utf-8")) for f in sorted((path.parent / "events").glob("*.json"))
    ]
    n = 0
    calls: list[str] = []
    results = []
    last_response = None
    for e in events:
        if e["kind"] == "ActionEvent":
            if e.get("llm_response_id") is None or e["llm_response_id"] != last_response:
                n += 1
            last_response = e.get("llm_response_id")
            calls.append(e["tool_call"]["id"])
            continue
        last_response = None
        if e["kind"] in ("SystemPromptEvent", "MessageEvent"):
            n += 1
        elif e["kind"] in ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation"):
            n += 1
            results.append((e["tool_call_id"], set(calls)))
    return {path.parent.name: counts(n, calls, results)}


def count_gemini_json_output(path: Path) -> dict[str, dict[str, int]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {path.name: counts(1, [], [])} if data.get("response") else {}


# --- OpenCode JSON storage --------------------------------------------------------------------


def count_opencode_storage(path: Path) -> dict[str, dict[str, int]]:
    """A session file: its messages under ../../message/<session>/, their parts under
    ../../part/<message>/; a user message with text is one message, an assistant message one per
    step plus one per tool part."""
    root = path.parents[2]
    session = json.loads(path.read_text(encoding="utf-8"))["id"]
    n = 0
    calls: list[str] = []
    results = []
    for mf in sorted((root / "message" / session).glob("*.json")):
        msg = json.loads(mf.read_text(encoding="utf-8"))
        parts = [
            json.loads(f.read_text(encoding="utf-8"))
            for f in sorted((root / "part" / msg["id"]).glob("*.json"))
        ]
        if msg["role"] == "user":
            n += any(p["type"] == "text" and not p.get("ignored") for p in parts)
            continue
        steps = max(1, sum(1 for p in parts if p["type"] == "step-start"))
        tools = [p for p in parts if p["type"] == "tool"]
        n += steps + len(tools)
        for p in tools:
            calls.append(p["callID"])
            results.append((p["callID"], set(calls)))
    return {path.name: counts(n, calls, results)}


def _claude_member(path: Path) -> bool:
    """A side file of a Claude Code session folder whose main file is there (read with it)."""
    session = path.parent.parent
    return (
        path.parent.name in ("subagents", "tool-results")
        and session.with_name(session.name + ".jsonl").is_file()
    )


def _storage_member(rel: str) -> bool:
    """A message or part file of the OpenCode storage fixture (counted through its session), or
    a Cline task's UI log or metadata (counted through its history file)."""
    return rel.startswith(("opencode-storage/storage/message/", "opencode-storage/storage/part/")) or (
        rel.startswith("cline-task/") and not rel.endswith("/api_conversation_history.json")
    )


def count_cline_task(path: Path) -> dict[str, dict[str, int]]:
    """A Cline task folder: its history file counted as an Anthropic list, the run named by the
    task's folder."""
    return {path.parent.name: next(iter(count_anthropic(path).values()))}


# --- the sets ----------------------------------------------------------------------------------

COUNTERS = [
    ("swe-agent/", ".traj", "swe_agent", count_swe_agent),
    ("mini-swe-agent/", ".traj.json", "mini_swe_agent", count_mini_swe_agent),
    ("openhands/", "output.jsonl", "openhands_eval", count_openhands_eval),
    ("openhands/", ".json", "openhands_events", count_openhands_events),
    ("openhands-sdk/", "-llm-message.json", "openai_chat", count_openai_chat),
    ("openhands-sdk/", ".json", "litellm_log", count_litellm),
    ("tau-bench/", ".json", "tau_bench", count_tau_bench),
    ("claude-code/", ".jsonl", "claude_code", count_claude_code),
    ("deer-flow/", ".txt", "deer_flow", count_deer_flow),
    ("agent-tars/", "event-stream.jsonl", "agent_tars_events", count_agent_tars),
    ("opencode/", ".md", "opencode_md", count_opencode),
    # wild/
    ("codex-cli/", ".jsonl", "codex_rollout", count_codex),
    ("aider/", ".md", "aider_history", count_aider),
    ("aider-architect/", ".md", "aider_history", count_aider),
    # incoming/ (the second batch, read where it is: ../shared is not ours to move)
    ("claude-code-compaction/", ".jsonl", "claude_code", count_claude_code),
    ("gemini-cli-empty/", ".jsonl", "gemini_cli", count_gemini),
    ("kimi-cli/", ".jsonl", "kimi_cli", count_kimi),
    ("inspect-ai/", ".json", "inspect_eval", count_inspect),
    ("sharegpt/", ".json", "sharegpt", count_sharegpt),
    # tests/data
    ("inspect-eval/", ".eval", "inspect_eval", count_inspect),
    ("cline/", ".json", "anthropic_messages", count_anthropic),
    ("cline-task/", "/api_conversation_history.json", "cline_task", count_cline_task),
    ("openhands-resolver/", ".jsonl", "openhands_resolver", count_openhands_resolver),
    ("langsmith/", ".jsonl", "langchain_messages", count_langsmith),
    ("langgraph/", ".jsonl", "langchain_messages", count_langgraph_trace),
    ("opencode-storage/storage/session/", ".json", "opencode_storage", count_opencode_storage),
    ("gemini-cli/", ".json", "gemini_cli", count_gemini),
    ("litellm-text-mode/", ".json", "litellm_log", count_litellm),
    ("anthropic-messages/", ".json", "anthropic_messages", count_anthropic),
    ("openai-responses/", ".json", "openai_responses", count_responses),
    ("claude-code-session/", ".jsonl", "claude_code", count_claude_code),
    ("claude-code-microcompact/", ".jsonl", "claude_code", count_claude_code),
    ("claude-code-synthetic/", ".jsonl", "claude_code", count_claude_code),
    ("gemini-contents/", ".json", "gemini_contents", count_gemini_contents),
    ("claude-stream-json/", ".jsonl", "claude_stream_json", count_claude_stream),
    ("codex-exec-json/", ".jsonl", "codex_exec_json", count_codex_exec),
    ("pydantic-ai/", ".json", "pydantic_ai", count_pydantic_ai),
    ("openai-agents/", ".json", "openai_responses", count_responses),
    ("smolagents/", ".json", "smolagents_memory", count_smolagents),
    ("atif/", ".json", "atif", count_atif),
    ("specstory/", ".md", "specstory_md", count_specstory),
    ("gemini-json-output/", ".json", "gemini_json_output", count_gemini_json_output),
    ("openhands-v1/", "base_state.json", "openhands_v1", count_openhands_v1),
]

#: the counted sets: name -> folder
SETS = {"raw": RAW, "wild": WILD, "incoming": INCOMING, "data": DATA}
#: files of a set that are not transcripts
NOT_TRANSCRIPTS = {"SOURCES.md", ".gitattributes"}


def count_all(root: Path = RAW) -> dict[str, Any]:
    """``{relative path: {"format", "runs": {run id: counts}}}`` for every transcript under ``root``."""
    out: dict[str, Any] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.name not in NOT_TRANSCRIPTS):
        if "__pycache__" in path.parts:
            continue
        rel = path.relative_to(root).as_posix()
        if (
            _storage_member(rel)
            or _claude_member(path)
            or (path.parent.name == "events" and "openhands-v1" in rel)
        ):
            continue
        for prefix, suffix, fmt, counter in COUNTERS:
            if rel.startswith(prefix) and rel.endswith(suffix):
                out[rel] = {"format": fmt, "runs": counter(path)}
                break
        else:
            raise SystemExit(f"no counter for {rel}")
    return out


def count_sets() -> dict[str, Any]:
    """:func:`count_all` of every set in :data:`SETS`."""
    return {name: count_all(root) for name, root in SETS.items()}


def main(argv: list[str]) -> int:
    missing = [str(root) for root in SETS.values() if not root.is_dir()]
    if missing:
        print(f"transcript sets not found: {missing}", file=sys.stderr)
        return 2
    data = count_sets()
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    if "--check" in argv:
        if OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is out of date; rerun tests/count_raw.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    for name, files in data.items():
        runs = sum(len(v["runs"]) for v in files.values())
        print(f"{name}: {len(files)} files, {runs} runs")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
