"""Loading files: one file (:func:`load_transcripts`), folders and lists (:func:`load_many`)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from pathlib import Path

import pluggy
from langchain_core.messages import SystemMessage

from ctxlab.transcripts._util import lenient_lines, warn
from ctxlab.transcripts.base import Transcript, TranscriptError, TranscriptFormat, TranscriptWarning
from ctxlab.transcripts.claude_code import session_main_of
from ctxlab.transcripts.cline import is_task_member
from ctxlab.transcripts.detection import HOW_TO_NAME_OR_WRITE, Detection, check_regular, detect
from ctxlab.transcripts.generic import GENERIC_NAME
from ctxlab.transcripts.opencode_storage import is_storage_member
from ctxlab.transcripts.openhands_v1 import is_event_member
from ctxlab.transcripts.pairing import pairing_problems
from ctxlab.transcripts.registry import available_formats

__all__ = ["NOT_TRANSCRIPT_SUFFIXES", "SKIP_NAMES", "iter_transcript_files", "load_many", "load_transcripts"]

#: file names never loaded when walking folders (besides hidden files and README*)
SKIP_NAMES = frozenset({"SOURCES.md", ".gitattributes"})

#: extensions of files that are never transcripts (code, configuration, media, archives, tables):
#: in a folder walk they are skipped and listed without being read
NOT_TRANSCRIPT_SUFFIXES = frozenset(
    {
        ".py", ".pyc", ".pyi", ".ipynb", ".js", ".mjs", ".ts", ".tsx", ".jsx", ".sh", ".bash", ".ps1",
        ".go", ".rs", ".java", ".c", ".h", ".cpp", ".rb", ".toml", ".ini", ".cfg", ".lock", ".yaml",
        ".yml", ".csv", ".tsv", ".parquet", ".arrow", ".png", ".jpg", ".jpeg", ".gif", ".webp",
        ".svg", ".ico", ".pdf", ".gz", ".tgz", ".bz2", ".xz", ".zst", ".zip", ".tar", ".whl",
        ".html", ".css", ".db", ".sqlite", ".log", ".diff", ".patch",
    }
)  # fmt: skip

#: TranscriptError kinds that mean "not a transcript" (skipped and listed in a folder walk); a file
#: of a known format that records no conversation (``"no_conversation"``) is one too
NOT_TRANSCRIPT_KINDS = frozenset({"unknown_format", "not_text", "not_a_run", "no_conversation"})

PathLike = str | os.PathLike[str]


def _run_loader(fmt: TranscriptFormat, path: Path, data: object = None) -> list[Transcript]:
    """``fmt`` loads ``path``; every :class:`TranscriptWarning` said on the way (by the loader or
    the helpers it used: a cut-off line, a dropped record) is also kept in each run's
    ``metadata["warnings"]``."""
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        result = _call_loader(fmt, path, data)
    _say_pairing(path, result)
    for w in said:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
        if issubclass(w.category, TranscriptWarning):
            for t in result:
                kept = t.metadata.setdefault("warnings", [])
                if str(w.message) not in kept:
                    kept.append(str(w.message))
    return _without_empty_runs(path, fmt.name, result)


def _say_pairing(path: Path, runs: list[Transcript]) -> None:
    """One check for every format (:mod:`ctxlab.transcripts.pairing`): a run whose tool pairs a
    provider would refuse is said in a warning naming the file, the run and the message, kept in
    that run's ``metadata["warnings"]``."""
    for t in runs:
        problem = pairing_problems(t.messages)
        if problem is not None:
            warn(path, problem if len(runs) == 1 else f"run {t.run_id}: {problem}", t.metadata)


def _call_loader(fmt: TranscriptFormat, path: Path, data: object) -> list[Transcript]:
    try:
        if data is not None and hasattr(fmt, "load_json"):
            result = fmt.load_json(data, path)
        else:
            result = fmt.load(path)
    except TranscriptError:
        raise
    except RecursionError as exc:
        raise TranscriptError(path, "", f"{fmt.name}: nested too deeply") from exc
    except Exception as exc:  # a loader bug or an unforeseen shape: still one file's error
        raise TranscriptError(path, "", f"{fmt.name} loader failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(result, list) or not all(isinstance(t, Transcript) for t in result):
        raise TranscriptError(
            path, "", f"{fmt.name} loader returned {type(result).__name__}, not transcripts"
        )
    if not result:
        raise TranscriptError(path, "", f"no transcripts in file ({fmt.name})")
    return result


def _is_empty(t: Transcript) -> bool:
    return not any(not isinstance(m, SystemMessage) for m in t.messages)


def _without_empty_runs(path: Path, fmt: str, runs: list[Transcript]) -> list[Transcript]:
    """One rule for every format: a run with no conversation (no message, or only a system
    message) is not a run.  A file with nothing else is refused, naming it and what it holds
    instead (``metadata["skipped_messages"]``/``["skipped_events"]`` of its loader; kind
    ``"no_conversation"``: in a folder walk it is skipped and listed, not failed); the empty
    runs of a file with other runs are left out with a warning naming them."""
    empty = [t for t in runs if _is_empty(t)]
    if not empty:
        return runs
    if len(empty) == len(runs):
        held = {}
        for t in runs:
            for key in ("skipped_messages", "skipped_events", "skipped_lines"):
                if isinstance(t.metadata.get(key), dict):
                    held.update(t.metadata[key])
        what = ", ".join(f"{n} {k}" for k, n in held.items() if n)
        raise TranscriptError(
            path,
            "",
            f"no conversation: the {fmt} file records no user or model message"
            + (f" (only {what})" if what else ""),
            kind="no_conversation",
        )
    kept = [t for t in runs if not _is_empty(t)]
    message = f"left out {len(empty)} run(s) with no conversation: {', '.join(t.run_id for t in empty)}"
    warn(path, message)
    for t in kept:
        t.metadata.setdefault("warnings", []).append(f"{path}: {message}")
    return kept


def _load_detected(path: Path, det: Detection) -> list[Transcript]:
    result = _run_loader(det.format, path, det.data)
    if det.how == "fallback":
        where = ", ".join(str(t.metadata.get("json_path")) for t in result)
        message = f"format: {GENERIC_NAME} at {where} (no loader claims this file)"
        warn(path, message)
        for t in result:
            t.metadata.setdefault("warnings", []).append(f"{path}: {message}")
    if det.problems:
        for t in result:
            t.metadata["detection_errors"] = list(det.problems)
    return result


def _load(path: Path, fmt_name: str | None, formats: dict[str, TranscriptFormat]) -> list[Transcript]:
    check_regular(path)
    if fmt_name is None:
        return _load_detected(path, detect(path, formats))
    fmt = formats.get(fmt_name)
    if fmt is None:
        known = ", ".join(formats)
        raise TranscriptError(
            path, "", f"unknown format {fmt_name!r} (known: {known}); {HOW_TO_NAME_OR_WRITE}"
        )
    if path.is_dir():
        raise TranscriptError(path, "", "is a folder (use load_many)")
    return _run_loader(fmt, path)


def load_transcripts(
    path: PathLike, *, format: str | None = None, pm: pluggy.PluginManager | None = None
) -> list[Transcript]:
    """Load one file as a list of transcripts (one per run).

    Args:
        path: the file.
        format: a format name from :func:`available_formats`: that loader reads the file, with no
            detection and no generic fallback.  ``None`` detects it (see
            :mod:`ctxlab.transcripts.detection`: sniffing the first 64 KiB, then the parsed JSON
            shape, then the generic message-array search, which warns naming the JSON paths).
        pm: the plugin manager whose formats to use (a default one when ``None``).

    Raises:
        TranscriptError: naming the file and the place: an empty file (``byte 0``), a binary file
            (``byte N``), invalid or truncated JSON (``line L column C``), a bad JSONL/SSE line
            (``line N``), an unknown JSON shape with no message list in it (``top level``), a bad
            key (``key history[3].role``), an unknown format (saying how to name one or write a
            loader).
    """
    return _load(Path(path), format, available_formats(pm))


#: hidden file names that are transcripts (Aider writes its history to a hidden file)
HIDDEN_TRANSCRIPTS = frozenset({".aider.chat.history.md"})


def _skipped(name: str) -> bool:
    hidden = name.startswith(".") and name not in HIDDEN_TRANSCRIPTS
    return hidden or name in SKIP_NAMES or name.upper().startswith("README")


def _walk(root: Path) -> set[Path]:
    found: set[Path] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        found.update(
            Path(dirpath) / f
            for f in filenames
            if not _skipped(f)
            and not is_storage_member(Path(dirpath) / f)
            and not is_event_member(Path(dirpath) / f)
            and not is_task_member(Path(dirpath) / f)
        )
    return found


def _without_members(files: set[Path]) -> set[Path]:
    """Leave out the side files of a Claude Code session whose main file is loaded too (it reads
    them: :func:`ctxlab.transcripts.claude_code.session_main_of`)."""
    return {f for f in files if session_main_of(f) not in files}


def iter_transcript_files(paths: PathLike | Iterable[PathLike]) -> list[Path]:
    """The files to load: files as given, folders walked recursively.

    In folders, hidden files and folders (``.*``, but Aider's ``.aider.chat.history.md``),
    ``README*``, ``SOURCES.md``, ``.gitattributes``, the message and part files of an OpenCode
    storage (read through its session file), the UI log and metadata of a Cline task (read
    through its history file) and the event files of an OpenHands V1 conversation (read through
    its ``base_state.json``) are skipped.  The side files of a Claude Code session
    (``<session>/subagents/``, ``<session>/tool-results/``) are left out when the session's main
    file is among the files (it reads them).  The result is de-duplicated and sorted by path.

    Raises:
        FileNotFoundError: a path does not exist.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out: set[Path] = set()
    for p in paths:
        root = Path(p)
        if root.is_dir():
            out.update(_walk(root))
        elif root.exists() or root.is_symlink():
            out.add(root)  # a file, or a symlink loop or broken symlink that loading names as such
        else:
            raise FileNotFoundError(f"no such file or folder: {root}")
    return sorted(_without_members(out), key=lambda q: q.as_posix())


def load_many(
    paths: PathLike | Iterable[PathLike],
    *,
    format: str | None = None,
    pm: pluggy.PluginManager | None = None,
    skipped: list[TranscriptError] | None = None,
    lenient: bool = False,
) -> tuple[list[Transcript], list[TranscriptError]]:
    """Load every transcript file under ``paths`` (see :func:`iter_transcript_files`).

    A file that fails is reported in the error list and skipped; one bad file (or a missing
    path) never raises.  Warnings (:class:`ctxlab.transcripts.TranscriptWarning`) are emitted as
    for :func:`load_transcripts` and kept in each transcript's ``metadata["warnings"]``.

    **Files that are not transcripts**, found by walking a folder, are not failures: a file with
    an extension in :data:`NOT_TRANSCRIPT_SUFFIXES` (``.py``, ``.csv``, images ...) is not read;
    a file no format recognises (``results.json``, a ``.txt`` of notes), a binary file, a
    Claude Code compaction call's file and a file of a known format that records no conversation
    (an empty Gemini CLI session: kind ``"no_conversation"``) are read and refused.  Each is appended to
    ``skipped`` (a :class:`TranscriptError` naming it and why) and all of them are said in one
    :class:`TranscriptWarning`.  A file named in ``paths`` itself is always loaded, and its
    refusal is an error.

    Args:
        lenient: leave out a JSON-lines file's bad lines with a warning each instead of failing
            the file (``ctxlab replay --keep-going``); a cut-off *last* line is always left out so.

    Returns:
        ``(transcripts in file order, errors in file order)``: the files of ``paths[0]`` first
        (sorted by path within it), then those of ``paths[1]``, ..., a file named twice loaded
        once, at its first place.  ``ctxlab replay``/``compare`` and their ``--jobs`` runs list
        their rows in this order.
    """
    formats = available_formats(pm)
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    files: list[tuple[Path, bool]] = []  # (file, found by walking a folder)
    errors: list[TranscriptError] = []
    for p in paths:
        try:
            walked = Path(p).is_dir()
            files.extend((f, walked) for f in iter_transcript_files([p]))
        except OSError as exc:
            errors.append(TranscriptError(os.fspath(p), "", f"no such file or folder ({exc})"))
    transcripts: list[Transcript] = []
    not_transcripts: list[TranscriptError] = []
    with lenient_lines(lenient):
        for f, walked in dict.fromkeys(files):  # the order of paths, each file once
            if walked and f.suffix.lower() in NOT_TRANSCRIPT_SUFFIXES:
                not_transcripts.append(
                    TranscriptError(f, "", f"not a transcript ({f.suffix} file): skipped", kind="not_text")
                )
                continue
            try:
                transcripts.extend(_load(f, format, formats))
            except TranscriptError as exc:
                (not_transcripts if walked and exc.kind in NOT_TRANSCRIPT_KINDS else errors).append(exc)
            except OSError as exc:
                errors.append(TranscriptError(f, "", f"cannot read file: {exc}"))
            except (RecursionError, MemoryError, ValueError) as exc:  # one bad file never stops the batch
                errors.append(TranscriptError(f, "", f"cannot load: {type(exc).__name__}: {exc}"))
    if not_transcripts:
        names = ", ".join(Path(e.path).name for e in not_transcripts[:10])
        more = f" and {len(not_transcripts) - 10} more" if len(not_transcripts) > 10 else ""
        warn(
            os.fspath(paths[0]) if len(paths) == 1 else "load_many",
            f"skipped {len(not_transcripts)} file(s) that are not transcripts: {names}{more}",
        )
    if skipped is not None:
        skipped.extend(not_transcripts)
    return transcripts, errors
