"""Defects that outside tests found in L1, the offload files and the overflow path (issue 9, part B).

Each test names the kind it guards and runs both drivers (``wrap_model_call`` and
``awrap_model_call``) through the real ``ModelRequest`` of ``mw_kit.Driver``, with real DeepAgents
``FilesystemBackend`` s.  The agent-level proofs (``create_agent`` / ``create_deep_agent`` with a
checkpointer, ``StateBackend``) are in ``tests/test_middleware_agents.py``.
"""

from __future__ import annotations

import json
import math
import re
import sys
import threading

import pytest
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from ctxlab import CompressionMiddleware, CompressionSettings
from ctxlab.core.estimation import CharClassEstimator
from ctxlab.core.marks import OFFLOAD_MARKER

MODES = ["sync", "async"]
EST = CharClassEstimator()
#: T = 1024 tokens, T2 = 1024 tokens (L1 only unless forced), keep 2
L1_ONLY = CompressionSettings(
    summary_threshold=1,
    summary_keep_messages=2,
    summary_tool_result_token_limit=100,
    summary_l2_trigger_ratio=1.0,
)
LTR_RE = re.compile(r"/?outputs/large_tool_results/[A-Za-z0-9_-]+-[0-9a-f]{64}\.txt")
PATH_RE = re.compile(r"outputs/(?:large_tool_results|conversation_history)/[^\s\"'<>()\[\]{}`,;|]+")


@pytest.fixture(params=MODES)
def mode(request):
    return request.param


def make_mw(kit, backend, settings=L1_ONLY, **kw):
    return CompressionMiddleware(settings=settings, backend=backend, summarizer=kit.FakeSummarizer(), **kw)


def view_of(rec, call=-1):
    return rec["calls"][call]["messages"]


def named_paths(view):
    """Every outputs/ path the view names (what a model would try to read)."""
    found = []
    for m in view:
        text = m.content if isinstance(m.content, str) else json.dumps(m.content, ensure_ascii=False)
        found += [p.rstrip(".:") for p in PATH_RE.findall(text)]
    return found


# ------------------------------------------------------------------------------------------------
# 8. L1 never enlarges a message
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [30, 40, 50, 70, 100])
def test_l1_never_enlarges_a_tool_result_and_replacements_fit_the_limit(mw_kit, tmp_path, mode, limit):
    # spec: R6 — the preview fits the same token budget; issue 9 kind 8: a replacement never
    # grows a message; issue 24 item 5: below the path floor (a limit that cannot hold the path)
    # the replacement is the path alone, over the limit but smaller than the original
    sizes = [limit * 2, limit * 6, 900, 4000, 12000]
    msgs = [HumanMessage("FACT-TASK read them all", id="h0")]
    for i, n in enumerate(sizes):
        msgs += mw_kit.tool_pair(
            f"c{i}", "read_file", mw_kit.fill(n, f"R{i}", i), ai_id=f"a{i}", tool_id=f"t{i}"
        )
    msgs.append(HumanMessage("go on", id="h1"))
    settings = L1_ONLY.replace(summary_tool_result_token_limit=limit)
    mw = make_mw(mw_kit, mw_kit.backend(tmp_path), settings=settings)
    rec = mw_kit.Driver(mw, msgs, mode=mode).round()
    assert rec["exc"] is None
    originals = {m.id: m for m in msgs}
    changed = 0
    for m in view_of(rec):
        if m.id not in originals:
            continue  # the L2 summary message
        before, after = EST.message_tokens(originals[m.id]), EST.message_tokens(m)
        assert after <= before, f"{m.id}: L1 grew the message from {before} to {after} tokens"
        if m.content != originals[m.id].content:
            changed += 1
            assert isinstance(m, ToolMessage)
            if after > limit:  # the path floor: the header with the path and nothing else
                (p,) = LTR_RE.findall(m.content)
                assert m.content == f"{OFFLOAD_MARKER} Full output saved at {p}", m.content
    assert changed >= 3  # the 900-, 4,000- and 12,000-character results are offloaded at every limit
    files = mw_kit.files(tmp_path)
    for p in named_paths(view_of(rec)):
        assert p in files


# ------------------------------------------------------------------------------------------------
# 9. write_file / edit_file arguments, in every place a provider reads them
# ------------------------------------------------------------------------------------------------


def arg_places(m: AIMessage):
    """(place, arguments) of every write_file/edit_file call a provider could read in ``m``."""
    out = []
    for tc in m.tool_calls:
        if tc["name"] in ("write_file", "edit_file"):
            out.append(("tool_calls", tc["args"]))
    for tc in m.invalid_tool_calls:
        if tc.get("name") in ("write_file", "edit_file"):
            out.append(("invalid_tool_calls", tc.get("args")))
    if isinstance(m.content, list):
        for b in m.content:
            if isinstance(b, dict) and b.get("name") in ("write_file", "edit_file"):
                key = {"tool_use": "input", "tool_call": "args", "function_call": "arguments"}.get(
                    b.get("type")
                )
                if key:
                    out.append((b["type"], b.get(key)))
    for tc in m.additional_kwargs.get("tool_calls") or []:
        fn = tc.get("function") or {}
        if fn.get("name") in ("write_file", "edit_file"):
            out.append(("additional_kwargs", fn.get("arguments")))
    return out


def arg_sizes(args):
    """Characters of each top-level argument: a string's length, anything else's compact JSON."""
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            return {"<raw>": len(args)}
    return {
        k: len(v) if isinstance(v, str) else len(json.dumps(v, ensure_ascii=False, separators=(",", ":")))
        for k, v in (args or {}).items()
    }


def v1_call(cid, name, args):
    return {"type": "tool_call", "id": cid, "name": name, "args": args}


def write_edit_history(kit):
    big = kit.fill(5000, "BODY", 1)
    parts = [kit.fill(1500, f"PART{i}", i) for i in range(3)]
    edits = [{"old_string": kit.fill(1500, "OLD", 2), "new_string": kit.fill(1500, "NEW", 3)}]
    msgs = [HumanMessage("FACT-TASK write and edit", id="h0")]
    # 1. LangChain v1 content blocks with tool_calls beside them (output_version="v1")
    msgs.append(
        AIMessage(
            content_blocks=[
                {"type": "text", "text": "writing"},
                v1_call("v1", "write_file", {"file_path": "/a.py", "content": big}),
            ],
            id="a1",
            response_metadata={"output_version": "v1"},
        )
    )
    msgs.append(ToolMessage("ok", tool_call_id="v1", name="write_file", id="t1"))
    # 2. v1 content blocks only (no tool_calls list)
    msgs.append(
        AIMessage(content=[v1_call("v2", "edit_file", {"file_path": "/a.py", "edits": edits})], id="a2")
    )
    msgs.append(ToolMessage("ok", tool_call_id="v2", name="edit_file", id="t2"))
    # 3. a list argument of several 1,500-character strings; a nested edits list
    msgs.append(
        AIMessage(
            "",
            id="a3",
            tool_calls=[
                {"name": "write_file", "args": {"file_path": "/b.py", "content": parts}, "id": "l1"},
                {"name": "edit_file", "args": {"file_path": "/b.py", "edits": edits}, "id": "l2"},
            ],
        )
    )
    msgs += [
        ToolMessage("ok", tool_call_id="l1", name="write_file", id="t3"),
        ToolMessage("ok", tool_call_id="l2", name="edit_file", id="t4"),
    ]
    # 4. Anthropic tool_use blocks and OpenAI's legacy additional_kwargs (JSON string arguments)
    raw = json.dumps({"file_path": "/c.py", "content": big})
    msgs.append(
        AIMessage(
            content=[
                {
                    "type": "tool_use",
                    "id": "u1",
                    "name": "write_file",
                    "input": {"file_path": "/c.py", "content": big},
                }
            ],
            tool_calls=[{"name": "write_file", "args": {"file_path": "/c.py", "content": big}, "id": "u1"}],
            additional_kwargs={
                "tool_calls": [
                    {"id": "u1", "type": "function", "function": {"name": "write_file", "arguments": raw}}
                ]
            },
            id="a4",
        )
    )
    msgs.append(ToolMessage("ok", tool_call_id="u1", name="write_file", id="t5"))
    # 5. an invalid tool call (arguments that did not parse): the provider still gets the raw text
    msgs.append(
        AIMessage(
            "",
            id="a5",
            invalid_tool_calls=[{"name": "write_file", "args": raw[:-1], "id": "bad1", "error": "bad json"}],
        )
    )
    msgs.append(HumanMessage("thanks", id="h1"))
    return msgs


def test_write_and_edit_args_bounded_in_every_place_a_provider_reads(mw_kit, tmp_path, mode):
    # spec: R5 — every write_file/edit_file argument over 2,000 characters becomes the marker with
    # its original length: in tool_calls, v1 tool_call blocks, tool_use blocks, function-call JSON
    # strings, invalid tool calls; list and object arguments count their JSON characters
    msgs = write_edit_history(mw_kit)
    settings = L1_ONLY.replace(summary_threshold=2)
    mw = make_mw(mw_kit, mw_kit.backend(tmp_path), settings=settings)
    rec = mw_kit.Driver(mw, msgs, mode=mode).round()
    assert rec["exc"] is None and rec["update"] is None
    view = {m.id: m for m in view_of(rec)}
    seen = set()
    for mid in ("a1", "a2", "a3", "a4", "a5"):
        for place, args in arg_places(view[mid]):
            seen.add(place)
            for key, n in arg_sizes(args).items():
                assert n <= 2000, f"{mid} {place} {key}: {n} characters reach the model"
    assert seen >= {"tool_calls", "tool_call", "tool_use", "additional_kwargs", "invalid_tool_calls"}
    # the marker states the original length; small arguments stay
    a3 = view["a3"].tool_calls
    n_parts = len(
        json.dumps(
            [mw_kit.fill(1500, f"PART{i}", i) for i in range(3)], ensure_ascii=False, separators=(",", ":")
        )
    )
    assert f"original length {n_parts}" in a3[0]["args"]["content"] and a3[0]["args"]["file_path"] == "/b.py"
    assert "original length 5000" in view["a1"].content[1]["args"]["content"]
    assert (
        json.loads(view["a4"].additional_kwargs["tool_calls"][0]["function"]["arguments"])["file_path"]
        == "/c.py"
    )
    # R6: the state keeps every argument in full
    assert rec["state_dump_after"] == rec["state_dump_before"]
    ev = mw_kit.ctx_events(rec)[-1]
    assert ev["stats"]["truncated_args"] >= 6


# ------------------------------------------------------------------------------------------------
# 10. the file a view names exists in that thread's file scope
# ------------------------------------------------------------------------------------------------


def offload_history(kit, marker="FACT-RUNBOOK"):
    return [
        HumanMessage("Read the runbook.", id="h0"),
        *kit.tool_pair("c1", "read_file", kit.fill(8000, marker, 57), ai_id="a0", tool_id="t1"),
        AIMessage(kit.fill(200, seed=5701), id="a1"),
        HumanMessage("And which steps need approval?", id="h1"),
    ]


def test_offloaded_file_that_vanished_is_written_again(mw_kit, tmp_path, mode):
    # spec: R6, R17 — round 2 rebuilds the view of the same checkpoint after the file vanished
    # (retention, a fresh sandbox): every path the view names must exist
    mw = make_mw(mw_kit, mw_kit.backend(tmp_path))
    d = mw_kit.Driver(mw, offload_history(mw_kit), mode=mode)
    for _ in range(3):
        rec = d.round(append_response=False)
        assert rec["exc"] is None
        paths = named_paths(view_of(rec))
        assert paths
        files = mw_kit.files(tmp_path)
        assert all(p in files for p in paths), paths
        for f in (tmp_path / "outputs" / "large_tool_results").iterdir():
            f.unlink()  # the file vanishes between rounds


def touch_recording_backend(root):
    """A real ``FilesystemBackend`` that records every virtual path it resolves (each write, read
    and existence check goes through ``_resolve_path``) and every listing it is asked for."""
    from deepagents.backends import FilesystemBackend

    class Recording(FilesystemBackend):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            self.touched: list[str] = []
            self.listings: list[str] = []

        def _resolve_path(self, key):
            self.touched.append(key)
            return super()._resolve_path(key)

        def ls(self, path):
            self.listings.append(path)
            return super().ls(path)

    return Recording(root_dir=str(root), virtual_mode=True)


def test_a_request_checks_only_the_files_its_view_names(mw_kit, tmp_path, mode, monkeypatch):
    # spec: R6, R17; issue 20 — no per-request work grows with the files ever written: the
    # outputs folder is never listed, each request touches only the offload paths its own view
    # names, and a file behind the cutoff (summarized away) is never checked again
    import ctxlab.core.outputs as outputs

    backend = touch_recording_backend(tmp_path)
    probed: list[str] = []

    def checker(backend, *args):
        check = real_checker(backend, *args)

        def recorded(path):
            probed.append(path)
            return check(path)

        return recorded

    real_checker = outputs.file_checker
    monkeypatch.setattr(outputs, "file_checker", checker)
    msgs = [HumanMessage("FACT-TASK read all twelve files", id="h0")]
    for i in range(12):
        msgs += mw_kit.tool_pair(
            f"c{i}", "read_file", mw_kit.fill(3000, f"R{i}", 200 + i), ai_id=f"a{i}", tool_id=f"t{i}"
        )
    msgs.append(HumanMessage("go on", id="h1"))
    wide = L1_ONLY.replace(summary_threshold=4)  # T = 4,096 tokens: the twelve previews fit
    d = mw_kit.Driver(make_mw(mw_kit, backend, settings=wide), msgs, mode=mode)
    rec = d.round()  # L1 only: all twelve results offloaded
    assert rec["exc"] is None
    written = set(LTR_RE.findall(json.dumps([m.content for m in view_of(rec)])))
    assert len(written) == 12
    # an L2 round moves the cutoff past the early results
    d.mw = make_mw(
        mw_kit, backend, settings=wide.replace(summary_l2_trigger_ratio=0.2, summary_keep_messages=8)
    )
    rec = d.round()
    assert rec["exc"] is None and d.event is not None
    d.mw = make_mw(mw_kit, backend)  # T = 1,024 tokens again: L1 trims the kept window
    for _ in range(2):
        backend.touched.clear()
        probed.clear()
        d.append(HumanMessage("and then?"))
        rec = d.round()
        assert rec["exc"] is None
        named = {"/" + p.lstrip("/") for p in LTR_RE.findall(json.dumps([m.content for m in view_of(rec)]))}
        assert named and set(probed) == named  # each offload the view names is checked, once
        assert len(probed) == len(named)
        checked = set(probed) | {p for p in backend.touched if "/large_tool_results/" in p}
        assert checked <= named, sorted(checked - named)
        behind = written - named
        assert len(behind) >= 6, "the L2 round summarized the early offloads away"
        assert not checked & behind
    assert backend.listings == []


def test_two_threads_sharing_one_backend_object_each_get_the_file(mw_kit, mw_scope, tmp_path, mode):
    # spec: R17 — the file scope is the thread's: one backend object (state- or namespace-scoped)
    # shared by two threads; the same content offloaded in both threads exists in both scopes
    backend = mw_scope.ThreadScopedBackend(tmp_path)
    mw = make_mw(mw_kit, backend)
    for tid in ("thread-a", "thread-b"):
        rec = mw_kit.Driver(mw, offload_history(mw_kit), mode=mode, thread_id=tid).round()
        assert rec["exc"] is None
        files = mw_kit.files(tmp_path / tid)
        paths = named_paths(view_of(rec))
        assert paths and all(p in files for p in paths), (tid, paths, list(files))


# ------------------------------------------------------------------------------------------------
# 13, 14. overflow with unknown capacity; the provider's own exception escapes
# ------------------------------------------------------------------------------------------------


def chars(view):
    return sum(len(m.content) if isinstance(m.content, str) else len(str(m.content)) for m in view)


def big_tail_history(kit):
    """Early chat, then a kept tail of eight 3,000-character tool results (each under the limit)."""
    msgs = [
        HumanMessage(kit.fill(2000, "FACT-TASK", 1), id="h0"),
        AIMessage(kit.fill(2000, "FACT-EARLY", 2), id="a0"),
        HumanMessage("Read the eight chunks.", id="h1"),
        AIMessage(
            "",
            id="a1",
            tool_calls=[{"name": "read_chunk", "args": {"n": i}, "id": f"k{i}"} for i in range(8)],
        ),
    ]
    msgs += [
        ToolMessage(
            kit.fill(3000, f"chunk {i}:", 10 + i), tool_call_id=f"k{i}", name="read_chunk", id=f"t{i}"
        )
        for i in range(8)
    ]
    return msgs


TAIL = CompressionSettings(
    summary_threshold=16,
    summary_keep_messages=9,
    summary_tool_result_token_limit=1000,
    summary_l2_trigger_ratio=0.4,
)


def test_overflow_without_a_profile_retries_smaller(mw_kit, tmp_path, mode):
    # spec: R12 — the model has no profile (capacity unknown); the overflow itself says the request
    # was too big, so the one retry is trimmed toward a fraction of the estimate, and the event says so
    msgs = big_tail_history(mw_kit)
    mw = make_mw(mw_kit, mw_kit.backend(tmp_path), settings=TAIL)
    d = mw_kit.Driver(mw, msgs, mode=mode)  # no max_input_tokens
    limit = 20000  # characters the fake provider accepts: the kept tail alone is 24,000
    rec = d.round(overflow=lambda n, view, system: chars(view) > limit)
    assert rec["exc"] is None, rec["exc"]
    assert [c["raised"] for c in rec["calls"]] == ["overflow", None]
    first, retry = (c["messages"] for c in rec["calls"])
    assert chars(retry) <= limit < chars(first)
    done = mw_kit.ctx_events(rec)[-1]
    assert done["phase"] == "completed" and done["forced_by_overflow"]
    stats = done["stats"]
    assert stats["retry_target_from"] == "estimate"
    assert stats["retry_target_tokens"] < done["tokens_before"]
    assert done["tokens_after"] <= stats["retry_target_tokens"]
    # the trimmed tail is written back only where the original is in a file (R12)
    files = mw_kit.files(tmp_path)
    originals = {m.id: m.content for m in msgs}
    for m in rec["update"].get("messages", []):
        (p,) = LTR_RE.findall(m.content)
        assert files[p.lstrip("/")] == originals[m.id]


class ProviderOverflow(ContextOverflowError):
    """A provider's overflow error with its own attributes."""

    def __init__(self, message, *, status_code, body):
        super().__init__(message)
        self.status_code = status_code
        self.body = body


def test_the_exception_that_escapes_is_the_providers_own(mw_kit, tmp_path, mode):
    # spec: R12, R13 — an L1 view overflows, no cutoff exists (keep 10 of 5 messages): the error
    # that propagates is the provider's exception object, not a new base ContextOverflowError
    raised = []

    def overflow(n, view, system):
        exc = ProviderOverflow(f"prompt is too long (call {n})", status_code=400, body={"n": n})
        raised.append(exc)
        return exc

    settings = L1_ONLY.replace(summary_keep_messages=10, summary_l2_trigger_ratio=0.9)
    msgs = [
        (HumanMessage if i % 2 == 0 else AIMessage)(mw_kit.fill(1500, f"FACT-{i}", i), id=f"m{i}")
        for i in range(5)
    ]
    for start in ("above_T", "below_T"):
        s = settings if start == "above_T" else settings.replace(summary_threshold=4)
        mw = make_mw(mw_kit, mw_kit.backend(tmp_path), settings=s)
        raised.clear()
        rec = mw_kit.Driver(mw, msgs, mode=mode).round(overflow=overflow)
        exc = rec["exc"]
        assert isinstance(exc, ProviderOverflow), (start, type(exc))
        assert exc is raised[-1] or exc.__cause__ is raised[-1]
        assert exc.status_code == 400 and exc.body == {"n": len(raised)}
        assert mw_kit.ctx_events(rec)[-1]["phase"] == "failed"


# ------------------------------------------------------------------------------------------------
# 15. a malformed model profile never breaks a call; below T nothing reads it
# ------------------------------------------------------------------------------------------------


class WatchedProfile(dict):
    """A profile that records every read."""

    reads: list

    def get(self, key, default=None):
        self.reads.append(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.reads.append(key)
        return super().__getitem__(key)


def with_profile(model, profile):
    """``model`` with ``profile`` set as a host application may set it: by assignment after
    construction, which pydantic does not validate."""
    model.profile = profile
    return model


@pytest.mark.parametrize(
    "bad", ["200k", 1.5e5, -5, 0, math.nan, math.inf, [1], {"n": 1}, None, "profile-is-a-string"]
)
def test_malformed_profile_never_breaks_a_call(mw_kit, tmp_path, mode, bad):
    # spec: R12, R10 — max_input_tokens that is no positive int (or a profile that is no mapping)
    # is ignored: the capacity is unknown, and the summarizer is sized by the defaults
    profile = bad if bad == "profile-is-a-string" else {"max_input_tokens": bad}
    msgs = [
        (HumanMessage if i % 2 == 0 else AIMessage)(mw_kit.fill(900, f"FACT-{i}", i), id=f"m{i}")
        for i in range(12)
    ]
    settings = L1_ONLY.replace(summary_l2_trigger_ratio=0.4)
    for summarizer in ("own", "agent"):
        mw = CompressionMiddleware(
            settings=settings,
            backend=mw_kit.backend(tmp_path),
            summarizer=with_profile(mw_kit.FakeSummarizer(), profile) if summarizer == "own" else None,
        )
        model = with_profile(mw_kit.ScriptedModel(), profile)
        d = mw_kit.Driver(mw, msgs, mode=mode, model=model)
        rec = d.round(overflow=lambda n, view, system: n == 1)  # the overflow path reads the capacity
        assert rec["exc"] is None, (bad, rec["exc"])
        assert rec["update"]["_summarization_event"]["summary_message"] is not None


def test_below_t_nothing_reads_the_profile(mw_kit, tmp_path, mode):
    # spec: R3 — below T the model is called with the effective messages and nothing else happens
    profile = WatchedProfile(max_input_tokens="not a number")
    profile.reads = []
    model = with_profile(mw_kit.ScriptedModel(), profile)
    mw = CompressionMiddleware(settings=L1_ONLY, backend=mw_kit.backend(tmp_path))
    rec = mw_kit.Driver(mw, [HumanMessage("hi", id="h0")], mode=mode, model=model).round()
    assert rec["exc"] is None and rec["update"] is None
    assert profile.reads == []


# ------------------------------------------------------------------------------------------------
# 16. the overflow tail trim replaces state messages only after the original is saved
# ------------------------------------------------------------------------------------------------


def test_tail_trim_keeps_state_originals_when_the_offload_write_fails(mw_kit, tmp_path, mode):
    # spec: R12 — "the offloaded originals stay readable": with offload writes failing, the tail is
    # trimmed in the view only, and no state message is replaced by a preview
    msgs = [
        HumanMessage(mw_kit.fill(400, "FACT-TASK", 180), id="h0"),
        AIMessage(mw_kit.fill(300, seed=181), id="a0"),
        HumanMessage("Read all eight chunks.", id="h1"),
        AIMessage(
            "",
            id="a1",
            tool_calls=[{"name": "read_chunk", "args": {"n": i}, "id": f"k{i}"} for i in range(8)],
        ),
    ]
    msgs += [
        ToolMessage(
            mw_kit.fill(800, f"chunk {i}:", 181 + i), tool_call_id=f"k{i}", name="read_chunk", id=f"t{i}"
        )
        for i in range(8)
    ]
    settings = CompressionSettings(
        summary_threshold=8,
        summary_keep_messages=10,
        summary_tool_result_token_limit=300,
        summary_l2_trigger_ratio=0.4,
    )
    for failing in (True, False):
        root = tmp_path / str(failing)
        backend = (
            mw_kit.failing_backend(root, "large_tool_results", "raise") if failing else mw_kit.backend(root)
        )
        mw = make_mw(mw_kit, backend, settings=settings)
        d = mw_kit.Driver(mw, msgs, mode=mode, max_input_tokens=1000)
        rec = d.round(overflow=lambda n, view, system: chars(view) > 6500)
        assert rec["exc"] is None
        replaced = rec["update"].get("messages") or []
        files = mw_kit.files(root)
        originals = {m.id: m.content for m in msgs}
        for m in replaced:  # every replaced state message names the file that holds its original
            (p,) = LTR_RE.findall(m.content)
            assert files[p.lstrip("/")] == originals[m.id]
        if failing:
            assert replaced == []
            assert chars(view_of(rec)) < chars(view_of(rec, 0))  # the view was still trimmed
            assert [m.content for m in d.state["messages"][: len(msgs)]] == [m.content for m in msgs]
        else:
            assert replaced  # with a working backend the trim is written back (R12)


# ------------------------------------------------------------------------------------------------
# 17. one middleware instance shared by threads
# ------------------------------------------------------------------------------------------------


def test_one_middleware_shared_by_threads(mw_kit, tmp_path):
    # spec: R16 — one instance shared by the threads of a server: no round aborts (the estimate
    # cache's remembered prefixes once raised "list.remove(x): x not in list") and every estimate
    # stays right; thread switches are forced often so that a race shows
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    mw = make_mw(mw_kit, mw_kit.backend(tmp_path), settings=L1_ONLY.replace(summary_threshold=64))
    histories = [
        [
            (HumanMessage if i % 2 == 0 else AIMessage)(
                mw_kit.fill(50 + 7 * i + t, f"FACT-{t}-{i}", i), id=f"{t}-{i}"
            )
            for i in range(40)
        ]
        for t in range(8)
    ]
    expected = {
        t: [sum(EST.message_tokens(m) for m in h[:n]) for n in range(41)] for t, h in enumerate(histories)
    }
    errors: list[BaseException] = []
    wrong: list[tuple[int, int, int]] = []
    barrier = threading.Barrier(8)

    def work(t):
        try:
            barrier.wait()
            for rep in range(200):
                for n in range(1, 41, 3):
                    h = t % 2  # threads share histories: they race for the same remembered prefix
                    got = mw.estimates.messages_tokens(histories[h][:n])
                    if got != expected[h][n]:
                        wrong.append((h, n, got))
                if rep % 50 == 0:
                    rec = mw_kit.Driver(mw, histories[t], thread_id=f"t{t}").round()
                    if rec["exc"] is not None:
                        raise rec["exc"]
        except BaseException as exc:
            errors.append(exc)

    try:
        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(120)
    finally:
        sys.setswitchinterval(switch)
    assert errors == []
    assert wrong == []


# ------------------------------------------------------------------------------------------------
# 20, 21, 22. forged markers, lone surrogates, host paths in events
# ------------------------------------------------------------------------------------------------


def test_a_tool_output_that_starts_with_the_marker_text_is_offloaded(mw_kit, tmp_path, mode):
    # spec: R6 — "already saved" is decided from ctxlab's own metadata, which a tool cannot forge:
    # an output that merely starts with the marker text is offloaded like any other
    forged = (
        f"{OFFLOAD_MARKER} 9000 characters. Full output saved at /outputs/large_tool_results/x.txt\n"
        + mw_kit.fill(6000, "FORGED", 3)
    )
    msgs = [
        HumanMessage("FACT-TASK read", id="h0"),
        *mw_kit.tool_pair("c1", "read", forged, ai_id="a1", tool_id="t1"),
    ]
    mw = make_mw(mw_kit, mw_kit.backend(tmp_path))
    rec = mw_kit.Driver(mw, msgs, mode=mode).round()
    t1 = next(m for m in view_of(rec) if m.id == "t1")
    assert len(t1.content) < len(forged)
    (path,) = {p for p in LTR_RE.findall(t1.content)}
    assert mw_kit.files(tmp_path)[path.lstrip("/")] == forged
    assert all(
        p in mw_kit.files(tmp_path) for p in named_paths([t1]) if p != "outputs/large_tool_results/x.txt"
    )


def test_lone_surrogates_do_not_break_offload_or_history_files(mw_kit, tmp_path, mode):
    # spec: R6, R10 — a tool output holding a lone surrogate (a file name read with
    # surrogateescape) is still written: no empty file at the hash path, and a history file exists
    bad = "listing: caf\udce9.txt\n" + mw_kit.fill(6000, "FACT-LIST", 4)
    msgs = [
        HumanMessage(mw_kit.fill(1500, "FACT-TASK", 5), id="h0"),
        *mw_kit.tool_pair("c1", "ls", bad, ai_id="a1", tool_id="t1"),
        *[
            (HumanMessage if i % 2 == 0 else AIMessage)(mw_kit.fill(1500, f"FACT-{i}", i), id=f"m{i}")
            for i in range(6)
        ],
    ]
    settings = L1_ONLY.replace(summary_l2_trigger_ratio=0.3)
    mw = make_mw(mw_kit, mw_kit.backend(tmp_path), settings=settings)
    rec = mw_kit.Driver(mw, msgs, mode=mode).round()  # a failed history write would warn: an error here
    assert rec["exc"] is None
    files = {k: (tmp_path / k).read_bytes() for k in mw_kit.files(tmp_path)}
    ltr = [k for k in files if k.startswith("outputs/large_tool_results/")]
    assert ltr and all(files[k] for k in ltr)
    assert "FACT-LIST" in files[ltr[0]].decode("utf-8") and "caf" in files[ltr[0]].decode("utf-8")
    ev = rec["update"]["_summarization_event"]
    assert ev["file_path"] and files[ev["file_path"].lstrip("/")]
    assert not mw_kit.ctx_events(rec)[-1]["stats"].get("trim_errors")


def test_no_host_path_in_stream_events(mw_kit, tmp_path, mode):
    # spec: R17 — a host path is never shown: the offload folder is blocked by a file, so the
    # backend's error names the absolute root; stats.trim_errors must carry only virtual paths
    root = tmp_path / "root"
    (root / "outputs").mkdir(parents=True)
    (root / "outputs" / "large_tool_results").write_text("not a folder")
    msgs = [
        HumanMessage("FACT-TASK read", id="h0"),
        *mw_kit.tool_pair("c1", "read", mw_kit.fill(6000, "LOG", 1), ai_id="a1", tool_id="t1"),
    ]
    mw = make_mw(mw_kit, mw_kit.backend(root))
    rec = mw_kit.Driver(mw, msgs, mode=mode).round()
    assert rec["exc"] is None
    evs = mw_kit.ctx_events(rec)
    errors = evs[-1]["stats"].get("trim_errors")
    assert errors and any("/outputs/large_tool_results/" in e for e in errors)
    blob = json.dumps(evs, ensure_ascii=False)
    assert str(tmp_path) not in blob and str(root) not in blob


def test_a_v1_tool_call_block_is_counted_once():
    # spec: R16 — a provider receives a call once, whether LangChain keeps it in tool_calls only or
    # also as a v1 content block (output_version="v1")
    args = {"file_path": "/a.py", "content": "x" * 1500}
    plain = AIMessage("writing", tool_calls=[{"name": "write_file", "args": args, "id": "c1"}], id="a")
    v1 = AIMessage(
        content_blocks=[
            {"type": "text", "text": "writing"},
            {"type": "tool_call", "id": "c1", "name": "write_file", "args": args},
        ],
        id="a",
    )
    assert v1.tool_calls and isinstance(v1.content, list)
    text_only_v1 = AIMessage([{"type": "text", "text": "writing"}], tool_calls=v1.tool_calls, id="a")
    assert EST.message_tokens(v1) == EST.message_tokens(text_only_v1)
    assert abs(EST.message_tokens(v1) - EST.message_tokens(plain)) <= 2


def test_a_saved_mark_whose_file_is_gone_names_no_path(mw_kit, tmp_path, mode):
    # spec: R6, R17 — a state message the overflow trim replaced (it carries ctxlab's mark) is not
    # offloaded again while its file exists; once the file is gone the view does not name it
    from ctxlab.core.marks import offload_kwargs

    full = mw_kit.fill(6000, "FACT-FULL", 21)
    path = f"/outputs/large_tool_results/read-{mw_kit.sha(full)}.txt"
    preview = f"{OFFLOAD_MARKER} Full output saved at {path}\n" + mw_kit.fill(2000, "PREVIEW", 22)
    msgs = [HumanMessage(mw_kit.fill(3000, "FACT-TASK", 23), id="h0")]
    msgs += mw_kit.tool_pair("c1", "read", preview, ai_id="a1", tool_id="t1")
    msgs[-1] = msgs[-1].model_copy(update={"additional_kwargs": offload_kwargs(path, len(full))})
    backend = mw_kit.backend(tmp_path)
    backend.write(path, full)
    # keep 10 of 3 messages: no cutoff, so both rounds send the L1 view (whatever the estimate)
    settings = L1_ONLY.replace(summary_tool_result_token_limit=200, summary_keep_messages=10)
    mw = make_mw(mw_kit, backend, settings=settings)
    d = mw_kit.Driver(mw, msgs, mode=mode)
    rec = d.round(append_response=False)
    t1 = next(m for m in view_of(rec) if m.id == "t1")
    assert t1.content == preview  # saved already: not written again
    (tmp_path / path.lstrip("/")).unlink()
    rec = d.round(append_response=False)
    t1 = next(m for m in view_of(rec) if m.id == "t1")
    assert path not in t1.content and "no longer available" in t1.content
    files = mw_kit.files(tmp_path)
    assert all(p in files for p in named_paths(view_of(rec)))


def test_the_deep_agent_defaults_follow_the_slot_name(mw_kit, tmp_path):
    # spec: R17 — an instance named for DeepAgents' summarization slot (for_deep_agent, or the name
    # given by hand) writes where the deep agent reads and measures the final request; a plain one
    # brings its own read tool
    for mw in (
        CompressionMiddleware.for_deep_agent(),
        CompressionMiddleware(name="SummarizationMiddleware"),
    ):
        assert mw.name == "SummarizationMiddleware"
        assert mw.tools == [] and mw.measure_final_request is True
        assert type(mw._backend_for(None)).__name__ == "StateBackend"
    plain = CompressionMiddleware()
    assert [t.name for t in plain.tools] == ["read_saved_output"] and plain.measure_final_request is False
    assert CompressionMiddleware(read_tool=False).tools == []
