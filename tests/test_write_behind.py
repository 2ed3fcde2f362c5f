"""Offload files written behind, trusted from the instance's own record (issue 31).

The view names an offload file before the file is on disk (the model call does not wait for the
disk); the middleware waits for the request's writes before its model node returns, so what reads
the file (the next tool node, ``read_saved_output``, the checkpoint of that step) finds it.  A
write that fails falls back as before: the next request writes the file again at once, or the view
keeps a preview that names no file; the model can still read what it was told to read.  Files this
middleware wrote are not checked again while the scope's offload folder is unchanged; a file that
vanished is written again before a view names it (case 57).  Each property runs both drivers
(``wrap_model_call``, ``awrap_model_call``) on real ``FilesystemBackend`` s.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from deepagents.backends import FilesystemBackend
from deepagents.backends.protocol import WriteResult
from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from ctxlab import CompressionMiddleware, CompressionSettings
from ctxlab.core.marks import offloaded_path_of
from ctxlab.replay.harness import ModelNodeHarness

MODES = ["sync", "async"]
#: T = 1,024 tokens, L1 only unless forced, tool results over 100 tokens offloaded
L1_ONLY = CompressionSettings(
    summary_threshold=1,
    summary_keep_messages=2,
    summary_tool_result_token_limit=100,
    summary_l2_trigger_ratio=1.0,
)
LTR_RE = re.compile(r"/outputs/large_tool_results/[A-Za-z0-9_-]+-[0-9a-f]{64}\.txt")


@pytest.fixture(params=MODES)
def mode(request):
    return request.param


class SlowBackend(FilesystemBackend):
    """A real ``FilesystemBackend`` whose writes take ``delay`` seconds (a slow disk), that
    records which thread wrote each path, and that fails every write after ``fail_after``
    successful ones (``None``: never)."""

    def __init__(self, root, delay=0.05, fail_after=None):
        super().__init__(root_dir=str(root), virtual_mode=True)
        self.delay = delay
        self.fail_after = fail_after
        self.written: list[tuple[str, str]] = []  # (path, thread name)
        self.lock = threading.Lock()

    def write(self, file_path, content):
        time.sleep(self.delay)
        with self.lock:
            ok = self.fail_after is None or len(self.written) < self.fail_after
            if ok:
                self.written.append((file_path, threading.current_thread().name))
        if not ok:
            return WriteResult(error="disk full (injected)")
        return super().write(file_path, content)

    async def awrite(self, file_path, content):
        return await asyncio.to_thread(self.write, file_path, content)


def tool_turn(kit, i, chars=5000):
    return kit.tool_pair(
        f"c{i}", "read_file", kit.fill(chars, f"FACT-{i}", 300 + i), ai_id=f"a{i}", tool_id=f"t{i}"
    )


def history(kit, n=3):
    msgs = [HumanMessage("Read the files and summarize them.", id="h0")]
    for i in range(n):
        msgs += tool_turn(kit, i)
    msgs.append(HumanMessage("go on", id="h1"))
    return msgs


def paths_in(view):
    return sorted({p for m in view for p in LTR_RE.findall(json.dumps(m.content, ensure_ascii=False))})


def on_disk(root, path):
    return (Path(root) / path.lstrip("/")).is_file()


def make_mw(kit, backend, settings=L1_ONLY, **kw):
    return CompressionMiddleware(settings=settings, backend=backend, summarizer=kit.FakeSummarizer(), **kw)


def test_the_model_call_does_not_wait_for_the_disk_and_the_node_does(mw_kit, tmp_path, mode):
    # spec: R6, R17 — issue 31: the first write of a scope is made at once (its outcome decides the
    # view, as before); later ones go behind: the model receives a view naming a file that is still
    # being written, and the model node returns only once it is written
    backend = SlowBackend(tmp_path, delay=0.2)
    d = mw_kit.Driver(make_mw(mw_kit, backend), history(mw_kit, 1), mode=mode)
    rec = d.round()
    assert rec["exc"] is None
    first = paths_in(rec["calls"][-1]["messages"])
    assert len(first) == 1 and on_disk(tmp_path, first[0])
    seen_at_call: dict[str, bool] = {}

    def model(req: ModelRequest) -> ModelResponse:
        for p in paths_in(req.messages):
            seen_at_call[p] = on_disk(tmp_path, p)
        return ModelResponse(result=[AIMessage("ok", id="r2")])

    d.append(*tool_turn(mw_kit, 7), HumanMessage("and that one?", id="h2"))
    if mode == "sync":
        d.harness.call(model)
    else:
        asyncio.run(d.harness.acall(model))
    new = [p for p in seen_at_call if p not in first]
    assert len(new) == 1
    assert seen_at_call[new[0]] is False, "the model call waited for the disk"
    assert on_disk(tmp_path, new[0]), "the node returned before its write"
    writers = dict(backend.written)
    assert writers[new[0]].startswith("ctxlab-writes"), writers


def test_own_files_are_not_checked_again_until_the_folder_changes(mw_kit, tmp_path, mode, monkeypatch):
    # spec: R6, R17 — issue 31: a file this middleware wrote is trusted while the offload folder is
    # unchanged (no check per request); a file that vanished is written again before a view names
    # it (case 57)
    import ctxlab.core.outputs as outputs

    probed: list[str] = []
    real = outputs.file_checker

    def counting(backend, *args):
        check = real(backend, *args)

        def recorded(path):
            probed.append(path)
            return check(path)

        return recorded

    monkeypatch.setattr(outputs, "file_checker", counting)
    mw = make_mw(mw_kit, mw_kit.backend(tmp_path))
    d = mw_kit.Driver(mw, history(mw_kit), mode=mode)
    rec = d.round(append_response=False)
    named = paths_in(rec["calls"][-1]["messages"])
    assert len(named) == 3 and all(on_disk(tmp_path, p) for p in named)
    probed.clear()
    for _ in range(2):  # nothing changed: nothing is checked, nothing written
        rec = d.round(append_response=False)
        assert paths_in(rec["calls"][-1]["messages"]) == named
        assert probed == []
    gone = Path(tmp_path) / named[1].lstrip("/")
    gone.unlink()  # the folder changed behind the middleware's back
    rec = d.round(append_response=False)
    assert paths_in(rec["calls"][-1]["messages"]) == named
    assert all(on_disk(tmp_path, p) for p in named), "a vanished file is named but not written again"
    assert set(probed) == set(named)  # each own file checked once after the change
    probed.clear()
    d.round(append_response=False)
    assert probed == []  # and trusted again


def test_a_failed_write_behind_falls_back_and_loses_nothing(mw_kit, tmp_path, mode, caplog):
    # spec: R6, R17 — issue 31: a write-behind that fails is logged; the next request writes the
    # file again at once and, when that fails too, keeps a preview that names no file (as before);
    # the model can still read the text it was told to read; the state keeps every original
    backend = SlowBackend(tmp_path, delay=0.0, fail_after=1)
    mw = make_mw(mw_kit, backend)
    d = mw_kit.Driver(mw, history(mw_kit, 1), mode=mode)
    assert d.round()["exc"] is None  # the first write succeeds: the scope goes behind from now on
    d.append(*tool_turn(mw_kit, 5), HumanMessage("and this?", id="h2"))
    with caplog.at_level("WARNING", logger="ctxlab.core.outputs"):
        rec = d.round()
    assert rec["exc"] is None and rec["update"] is None
    promised = [p for p in paths_in(rec["calls"][-1]["messages"]) if not on_disk(tmp_path, p)]
    assert len(promised) == 1 and "could not be written (write-behind)" in caplog.text
    # the model reads it anyway: the text is answered from memory (the write fails again)
    read = next(t for t in mw.tools if t.name == "read_saved_output")
    runtime = type("R", (), {"context": None})()
    answer = read.func(promised[0], runtime, 0, 3)
    assert "FACT-5" in answer
    # the next request: checked, written again at once, failed again: the preview names no file
    rec = d.round(append_response=False)
    view = rec["calls"][-1]["messages"]
    t5 = next(m for m in view if m.id == "t5")
    assert "could not be saved" in t5.content and promised[0] not in t5.content
    assert all(on_disk(tmp_path, p) for p in paths_in(view))
    assert rec["state_dump_after"] == rec["state_dump_before"]


def test_trimmed_messages_whose_file_was_not_written_stay_whole_in_the_state(mw_kit, tmp_path):
    # spec: R12 — issue 31: the overflow tail trim writes offloaded copies into the state only when
    # their file was written; a write-behind that failed leaves the original in the state
    backend = SlowBackend(tmp_path, delay=0.0, fail_after=1)
    settings = CompressionSettings(
        summary_threshold=1, summary_keep_messages=8, summary_tool_result_token_limit=400
    )
    msgs = [HumanMessage("warm up", id="h0"), *tool_turn(mw_kit, 0, 2600)]
    d = mw_kit.Driver(make_mw(mw_kit, backend, settings=settings), msgs, mode="sync")
    assert d.round()["exc"] is None  # below T: nothing written yet
    d.append(*tool_turn(mw_kit, 1, 1500), *tool_turn(mw_kit, 2, 1500), HumanMessage("go", id="h9"))
    # the first offload is written at once and succeeds; the two after it go behind and fail
    rec = d.round(overflow=lambda n, view, system: n == 1)
    assert rec["exc"] is None
    for m in d.state["messages"]:
        path = offloaded_path_of(m)
        assert path is None or on_disk(tmp_path, path), f"the state names {path}, which was never written"
    originals = {m.id: m for m in [*msgs, *tool_turn(mw_kit, 1, 1500), *tool_turn(mw_kit, 2, 1500)]}
    for m in d.state["messages"]:
        if m.id in ("t1", "t2") and offloaded_path_of(m) is None:
            assert m.content == originals[m.id].content


def test_a_cancelled_request_still_finishes_its_writes(mw_kit, tmp_path):
    # spec: R14, R17 — issue 31: an async request cancelled during the model call emits failed,
    # finishes its writes before the cancellation propagates, and the next request is served
    backend = SlowBackend(tmp_path, delay=0.3)
    mw = make_mw(mw_kit, backend)
    d = mw_kit.Driver(mw, history(mw_kit, 1), mode="async")
    assert d.round()["exc"] is None
    d.append(*tool_turn(mw_kit, 4), HumanMessage("more", id="h2"))
    events: list[dict] = []
    named: list[str] = []

    async def model(req: ModelRequest) -> ModelResponse:
        named.extend(paths_in(req.messages))
        await asyncio.sleep(10)
        raise AssertionError("not cancelled")

    async def run() -> None:
        h = ModelNodeHarness(
            mw, system_message=None, record=False, middleware_tools=False, on_event=events.append
        )
        h.state = d.state
        task = asyncio.create_task(h.acall(model))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())
    assert [e["phase"] for e in events if isinstance(e, dict)][-1] == "failed"
    assert named and all(on_disk(tmp_path, p) for p in named), "a cancelled request left a write behind"
    rec = d.round()
    assert rec["exc"] is None and all(on_disk(tmp_path, p) for p in paths_in(rec["calls"][-1]["messages"]))


def test_threads_sharing_one_middleware_and_folder_name_only_written_files(mw_kit, tmp_path):
    # spec: R6, R17 — issue 31: one middleware serves four threads at once over one offload folder;
    # each request sees the other threads' writes as changes of the folder, and every view names
    # only files that are on disk when its node returns
    backend = SlowBackend(tmp_path, delay=0.01)
    mw = make_mw(mw_kit, backend)
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def run(t: int) -> None:
        try:
            d = mw_kit.Driver(mw, history(mw_kit, 1), mode="sync" if t % 2 else "async", thread_id=f"t{t}")
            start.wait()
            for r in range(4):
                d.append(
                    *tool_turn(mw_kit, 10 * t + r, 2000 + 100 * r), HumanMessage(f"step {r}", id=f"h{t}-{r}")
                )
                rec = d.round()
                assert rec["exc"] is None, rec["exc"]
                view = rec["calls"][-1]["messages"]
                assert all(on_disk(tmp_path, p) for p in paths_in(view)), paths_in(view)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors


CRASH = textwrap.dedent(
    """
    import os, sys, time
    from deepagents.backends import FilesystemBackend
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from ctxlab import CompressionMiddleware, CompressionSettings
    from ctxlab.replay.harness import ModelNodeHarness

    class Slow(FilesystemBackend):
        def write(self, path, content):
            time.sleep(2)
            return super().write(path, content)

    root = sys.argv[1]
    mw = CompressionMiddleware(
        settings=CompressionSettings(summary_threshold=1, summary_tool_result_token_limit=100, summary_l2_trigger_ratio=1.0),
        backend=Slow(root_dir=root, virtual_mode=True),
    )
    h = ModelNodeHarness(mw, record=False)
    lines = [f"line {i} of the first file" for i in range(400)]
    h.add(HumanMessage("go", id="h0"),
          AIMessage("", id="a0", tool_calls=[{"name": "read_file", "args": {}, "id": "c0"}]),
          ToolMessage("\\n".join(lines), tool_call_id="c0", name="read_file", id="t0"))
    h.call(AIMessage("ok", id="r0"))
    h.add(AIMessage("", id="a1", tool_calls=[{"name": "read_file", "args": {}, "id": "c1"}]),
          ToolMessage("\\n".join(l.replace("first", "second") for l in lines), tool_call_id="c1", name="read_file", id="t1"))

    def crash(request):
        os._exit(3)  # the process dies during the model call: its write-behind never lands

    h.call(crash)
    """
)


def test_a_crash_during_the_model_call_leaves_nothing_that_names_a_missing_file(mw_kit, tmp_path):
    # spec: R6, R17 — issue 31: a process that dies while a write is behind never saved the
    # checkpoint of that step (the node did not return); the next process, from the last
    # checkpoint, checks the files it did not write and writes what is missing before naming it
    done = subprocess.run(
        [sys.executable, "-c", CRASH, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 3, done.stderr
    written = sorted(p.name for p in (tmp_path / "outputs" / "large_tool_results").iterdir())
    assert len(written) == 1  # the first file (written at once); the second was still behind
    lines = [f"line {i} of the first file" for i in range(400)]
    msgs = [
        HumanMessage("go", id="h0"),
        AIMessage("", id="a0", tool_calls=[{"name": "read_file", "args": {}, "id": "c0"}]),
        ToolMessage("\n".join(lines), tool_call_id="c0", name="read_file", id="t0"),
        AIMessage("ok", id="r0"),
        AIMessage("", id="a1", tool_calls=[{"name": "read_file", "args": {}, "id": "c1"}]),
        ToolMessage(
            "\n".join(x.replace("first", "second") for x in lines),
            tool_call_id="c1",
            name="read_file",
            id="t1",
        ),
    ]
    fresh = CompressionMiddleware(
        settings=CompressionSettings(
            summary_threshold=1, summary_tool_result_token_limit=100, summary_l2_trigger_ratio=1.0
        ),
        backend=FilesystemBackend(root_dir=str(tmp_path), virtual_mode=True),
    )
    rec = mw_kit.Driver(fresh, msgs, mode="sync").round()
    view = rec["calls"][-1]["messages"]
    assert len(paths_in(view)) == 2 and all(on_disk(tmp_path, p) for p in paths_in(view))


def test_the_history_file_is_named_by_its_span(mw_kit):
    # spec: R10 — issue 31: the history file is named before it is rendered, by the span's ids,
    # types and sizes: two different histories of one range get two files
    from ctxlab.core.cutoff import history_key
    from ctxlab.core.files import history_path

    a = [HumanMessage("x" * 10, id="m1"), AIMessage("y", id="m2")]
    edited = [HumanMessage("x" * 11, id="m1"), AIMessage("y", id="m2")]
    rewound = [HumanMessage("x" * 10, id="m9"), AIMessage("y", id="m2")]
    names = {history_path("t", 0, 2, history_key(s, 0, 2)) for s in (a, edited, rewound)}
    assert len(names) == 3
    assert history_path("t", 0, 2, history_key(list(a), 0, 2)) in names  # the same span, the same name


def test_the_direct_estimate_hook_follows_the_plugin_manager():
    # spec: R16 — issue 31: the one estimator plugin is called without pluggy's dispatch, and a
    # plugin registered later, or a monitored manager, is honoured at once
    from ctxlab.core.hooks import CompressionHooks
    from ctxlab.core.hookspecs import hookimpl
    from ctxlab.core.plugins import make_plugin_manager

    pm = make_plugin_manager()
    hooks = CompressionHooks(pm)
    m = HumanMessage("The build step compiles each module.", id="x")
    assert hooks.estimate_message(m) == pm.hook.ctxlab_estimate_message(message=m)

    class Seven:
        @hookimpl(tryfirst=True)
        def ctxlab_estimate_message(self, message):
            return 7

    pm.register(Seven())
    assert hooks.estimate_message(m) == 7
    pm.unregister(name=pm.get_name(next(p for p in pm.get_plugins() if isinstance(p, Seven))))
    seen: list[str] = []
    pm.add_hookcall_monitoring(lambda name, impls, kwargs: seen.append(name), lambda *a: None)
    assert hooks.estimate_message(m) == pm.hook.ctxlab_estimate_message(message=m)
    assert "ctxlab_estimate_message" in seen
