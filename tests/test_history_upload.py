"""The history file written as bytes where the backend takes them (issue 31, R10/R17).

A DeepAgents ``FilesystemBackend`` gets the history file through ``upload_files`` (the UTF-8 of
the document, encoded piece by piece: the text is never held beside its whole encoding); the file
must be the same bytes ``write`` wrote before.  A backend without ``upload_files`` (a user's own),
or a ``FilesystemBackend`` subclass that changes ``write``, is written with ``write`` as before.
A failed upload is tried again with ``write``: a failure is reported exactly as a failed write
(the same error text, the same warning, ``file_path`` ``None``), and nothing is lost.  Every case
runs both drivers on real files.
"""

from __future__ import annotations

import pytest
from deepagents.backends import FilesystemBackend
from deepagents.backends.protocol import FileUploadResponse
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from ctxlab import CompressionMiddleware, CompressionSettings
from ctxlab.core.cutoff import history_document, history_pieces
from ctxlab.core.files import FileWriteError, encoded, takes_bytes, writable_text, write_pieces, write_text

MODES = ["sync", "async"]
#: T = 256 tokens, keep 4: the first round summarizes
SETTINGS = CompressionSettings(
    summary_threshold=0.25,
    summary_keep_messages=4,
    summary_tool_result_token_limit=300,
    summary_l2_trigger_ratio=0.4,
)


@pytest.fixture(params=MODES)
def mode(request):
    return request.param


def conversation(kit) -> list[BaseMessage]:
    """Twelve messages past T: non-ASCII text, a lone surrogate (an undecodable file name),
    backtick runs, a tool call with string and JSON arguments."""
    msgs: list[BaseMessage] = [
        HumanMessage(
            "Répare le fichier caf\udce9.txt — 中文说明 ```code``` " + kit.fill(300, "FACT-H0", seed=1),
            id="h0",
        )
    ]
    for i in range(1, 12):
        if i % 2:
            msgs.append(
                AIMessage(
                    kit.fill(280, f"FACT-A{i} ünïcödé 😀", seed=10 + i),
                    id=f"a{i}",
                )
            )
        else:
            msgs.append(HumanMessage(kit.fill(280, f"FACT-H{i} 日本語", seed=20 + i), id=f"h{i}"))
    return msgs


def first_round(kit, backend, mode: str, msgs: list[BaseMessage]) -> dict:
    mw = CompressionMiddleware(
        settings=SETTINGS, backend=backend, summarizer=kit.FakeSummarizer(mode="fixed")
    )
    rec = kit.Driver(mw, msgs, mode=mode).round()
    assert rec["exc"] is None
    return rec["update"]["_summarization_event"]


def expected_bytes(msgs: list[BaseMessage], cut: int) -> bytes:
    """What ``write`` puts on disk for the document (main's path: the text, then ``write``)."""
    return writable_text(history_document(msgs[:cut], 0, cut, None)).encode("utf-8")


def test_filesystem_backend_gets_the_history_as_bytes_the_same_file(mw_kit, tmp_path, mode):
    backend = mw_kit.backend(tmp_path)
    uploads: list[list[tuple[str, int]]] = []
    real = backend.upload_files

    def spy(files):
        uploads.append([(p, len(b)) for p, b in files])
        return real(files)

    backend.upload_files = spy  # an instance attribute: the class's methods stay FilesystemBackend's
    assert takes_bytes(backend)
    msgs = conversation(mw_kit)
    event = first_round(mw_kit, backend, mode, msgs)
    path, cut = event["file_path"], event["cutoff_index"]
    assert path and path.startswith("/outputs/conversation_history/") and cut >= 4
    data = (tmp_path / path.lstrip("/")).read_bytes()
    assert data == expected_bytes(msgs, cut)
    assert "caf\\udce9.txt" in data.decode("utf-8") and "FACT-H0" in data.decode("utf-8")
    assert uploads == [[(path, len(data))]]


def test_pieces_encode_to_the_bytes_write_writes(tmp_path):
    pieces = ["# head\n", "caf\udce9 \ud83d\ude00 😀 中文", "```\n", "plain\r\n", ""]
    assert encoded(pieces) == writable_text("".join(pieces)).encode("utf-8")
    a, b = (FilesystemBackend(root_dir=str(tmp_path / d), virtual_mode=True) for d in "ab")
    path = "/outputs/conversation_history/x.md"
    write_text(a, path, "".join(pieces))
    write_pieces(b, path, lambda: iter(pieces))
    assert (tmp_path / "b" / path.lstrip("/")).read_bytes() == (
        tmp_path / "a" / path.lstrip("/")
    ).read_bytes()
    assert history_document([], 3, 5, "p") == "".join(history_pieces([], 3, 5, "p"))


class WriteOnlyBackend:
    """A user's own backend: ``write`` (and ``download_files`` for the existence checks), no
    ``upload_files``; files kept in a FilesystemBackend folder."""

    def __init__(self, root) -> None:
        self.inner = FilesystemBackend(root_dir=str(root), virtual_mode=True)
        self.writes: list[tuple[str, str]] = []

    def write(self, file_path, content):
        self.writes.append((file_path, content))
        return self.inner.write(file_path, content)

    async def awrite(self, file_path, content):
        return self.write(file_path, content)

    def download_files(self, paths):
        return self.inner.download_files(paths)


@pytest.mark.parametrize("kind", ["own backend", "subclass changing write"])
def test_a_backend_without_upload_files_is_written_with_write(mw_kit, tmp_path, mode, kind):
    backend = WriteOnlyBackend(tmp_path) if kind == "own backend" else mw_kit.counting_backend(tmp_path)
    assert not takes_bytes(backend)
    msgs = conversation(mw_kit)
    event = first_round(mw_kit, backend, mode, msgs)
    path, cut = event["file_path"], event["cutoff_index"]
    written = [text for p, text in backend.writes if p == path]
    assert written == [writable_text(history_document(msgs[:cut], 0, cut, None))]
    assert (tmp_path / path.lstrip("/")).read_bytes() == expected_bytes(msgs, cut)


@pytest.mark.parametrize("how", ["error answer", "raises", "no answer"])
def test_a_failed_upload_is_written_with_write(mw_kit, tmp_path, mode, how):
    backend = mw_kit.backend(tmp_path)
    tried: list[str] = []

    def failing(files):
        tried.extend(p for p, _ in files)
        if how == "raises":
            raise OSError(5, "Input/output error (injected)")
        return (
            []
            if how == "no answer"
            else [FileUploadResponse(path=p, error="permission_denied") for p, _ in files]
        )

    backend.upload_files = failing
    msgs = conversation(mw_kit)
    event = first_round(mw_kit, backend, mode, msgs)
    path, cut = event["file_path"], event["cutoff_index"]
    assert tried == [path]  # the upload was tried, then write wrote the file: nothing lost
    assert (tmp_path / path.lstrip("/")).read_bytes() == expected_bytes(msgs, cut)


def test_a_failing_upload_is_reported_like_a_failing_write(mw_kit, tmp_path, mode):
    # a real failure: a regular file where the history folder should be (both methods fail)
    (tmp_path / "outputs").mkdir()
    (tmp_path / "outputs" / "conversation_history").write_text("not a folder")
    backend = mw_kit.backend(tmp_path)
    path = "/outputs/conversation_history/s.md"
    with pytest.raises(FileWriteError) as by_write:
        write_text(backend, path, "text")
    with pytest.raises(FileWriteError) as by_pieces:
        write_pieces(backend, path, lambda: iter(["te", "xt"]))
    assert by_pieces.value.reason == by_write.value.reason and by_pieces.value.path == path
    assert "Error writing file" in by_write.value.reason  # write's own error text, not the upload's
    msgs = conversation(mw_kit)
    with pytest.warns(RuntimeWarning, match="conversation history not saved"):
        event = first_round(mw_kit, backend, mode, msgs)
    assert event["file_path"] is None
