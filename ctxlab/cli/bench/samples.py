"""Labeled text samples per content class, for the estimator benchmark and calibration.

Content classes (:data:`CLASSES`) are labeled from the text itself (:func:`label_block`),
independently of any estimator's features; :func:`collect_samples` extracts them from the
public transcripts.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CALIBRATION_ONLY_CLASSES",
    "CLASSES",
    "TEXTSETS_DIR",
    "TEXTSET_CLASSES",
    "Sample",
    "cjk_share",
    "collect_samples",
    "default_transcripts_dir",
    "is_json_text",
    "label_block",
    "segment",
    "synthetic_base64",
    "textset",
]

#: the content classes of the estimator benchmark and calibration
CLASSES = ("prose", "code", "json", "logs", "cjk", "base64")

#: the classes of the off-sample text sets (:func:`textset`): six scripts, Chinese documentation
#: mixed with English (``mixed-cjk``), emoji chat, URLs, minified JavaScript, CSV, hex, diffs, stack
#: traces, digit-heavy logs, English docs and Python source, and (issue 30, from
#: ``tools/textsets_safe_side.py``) repetitive text, minified JSON and base64
TEXTSET_CLASSES = (
    "cyrillic",
    "arabic",
    "devanagari",
    "japanese",
    "korean",
    "chinese",
    "mixed-cjk",
    "emoji",
    "urls",
    "minjs",
    "csv",
    "hex",
    "diffs",
    "traces",
    "numlogs",
    "docs",
    "pycode",
    "repetitive",
    "minjson",
    "base64",
)
#: classes of the calibration split only: scripts the held-out set does not test (Greek, Hebrew,
#: Thai, Georgian, Vietnamese, Armenian, accented Latin, Ethiopic), so that their lead bytes are fitted
CALIBRATION_ONLY_CLASSES = ("other-scripts",)
#: the committed text sets: ``calibration.jsonl`` and ``heldout.jsonl`` (and ``SOURCES.md``)
TEXTSETS_DIR = Path(__file__).resolve().parent / "textsets"

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
    merged: list[tuple[str | None, str]] = []
    for block in _blocks(text):
        cls = label_block(block)
        if merged and merged[-1][0] == cls:
            merged[-1] = (cls, merged[-1][1] + "\n\n" + block)
        else:
            merged.append((cls, block))
    out: list[tuple[str, str]] = []
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
    repo = Path(__file__).resolve().parents[3]  # ctxlab/cli/bench/samples.py -> the checkout
    for base in (repo, Path.cwd()):
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
            for found in _RAW_B64.finditer(path.read_text(encoding="utf-8", errors="replace")):
                add("base64", found.group(0), path.name)
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


def textset(split: str) -> list[Sample]:
    """The samples of one fixed split of the off-sample text sets, in file order.

    ``"calibration"`` is what ``tools/calibrate.py`` fits on (with the
    transcript samples of :func:`collect_samples`); ``"heldout"`` comes from disjoint sources and
    is only measured (``ctxlab bench``, ``tests/test_estimation_heldout.py``).  Classes:
    :data:`TEXTSET_CLASSES`; sources and licences: ``textsets/SOURCES.md``; built by
    ``tools/make_textsets.py``.

    Raises:
        ValueError: an unknown split.  FileNotFoundError: the data file is missing.
    """
    if split not in ("calibration", "heldout"):
        raise ValueError(f"split {split!r}: allowed 'calibration' or 'heldout'")
    out = []
    with (TEXTSETS_DIR / f"{split}.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            out.append(Sample(row["cls"], row["text"], row["source"]))
    return out
