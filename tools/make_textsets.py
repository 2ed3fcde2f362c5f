"""Build the estimator's text sets: ``ctxlab/cli/bench/textsets/{calibration,heldout}.jsonl``.

    .venv/bin/python -m tools.make_textsets [--repo .]

Two fixed splits with the same classes (:data:`ctxlab.cli.bench.samples.TEXTSET_CLASSES`) from
*disjoint* sources: ``tools/calibrate.py`` fits on ``calibration`` (plus the transcript samples);
``heldout`` is only ever measured (``ctxlab bench``, ``tests/test_estimation_heldout.py``).
Everything is generated offline and deterministically (fixed seeds) from material with a
permissive licence; ``ctxlab/cli/bench/textsets/SOURCES.md`` lists it per class and split.  The
JSONL files are committed: re-running this script is only needed to change them, and needs the
dev environment (babel, matplotlib, numpy, jupyterlab installed) and the repository's git history.
"""

from __future__ import annotations

import argparse
import ast
import base64
import difflib
import hashlib
import inspect
import json
import random
import re
import subprocess
import sys
import traceback
import unicodedata
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
WRITTEN = HERE / "textsets" / "written"
SEED = {"calibration": 11, "heldout": 23}
SPLITS = ("calibration", "heldout")


def _site(pkg: str) -> Path:
    mod = __import__(pkg)
    return Path(mod.__file__).resolve().parent


def _chunks(text: str, size: int) -> list[str]:
    out, cur, n = [], [], 0
    for line in text.splitlines(keepends=True):
        if n + len(line) > size and cur:
            out.append("".join(cur))
            cur, n = [], 0
        cur.append(line[:size])
        n += min(len(line), size)
    if cur:
        out.append("".join(cur))
    return [c for c in out if c.strip()]


def _limit(items: list[str], chars: int) -> list[str]:
    out, n = [], 0
    for it in items:
        if n >= chars:
            break
        out.append(it)
        n += len(it)
    return out


# --- scripts: hand-written prose + CLDR names (babel) -------------------------------------------

SCRIPTS = {
    # class: (written file stem, CLDR locales for calibration, CLDR locales for held-out)
    "cyrillic": ("ru", ("ru", "uk"), ("bg", "sr", "kk")),
    "arabic": ("ar", ("ar", "fa"), ("ur", "ar_EG")),
    "devanagari": ("hi", ("hi",), ("mr", "ne")),
    "japanese": ("ja", ("ja",), ("ja",)),
    "korean": ("ko", ("ko",), ("ko",)),
    "chinese": ("zh", ("zh",), ("zh_Hant",)),
}


def _cldr_text(locale: str, split: str) -> list[str]:
    """Sentence-like lines from CLDR display names; calibration and held-out use different fields."""
    from babel import Locale

    loc = Locale.parse(locale)
    if split == "calibration":
        fields = [("territories", loc.territories), ("languages", loc.languages)]
    else:
        fields = [("currencies", loc.currencies), ("scripts", loc.scripts), ("units", _units(loc))]
    out = []
    for _, names in fields:
        values = [v for _, v in sorted(names.items()) if v]
        for i in range(0, len(values), 12):
            out.append(", ".join(values[i : i + 12]) + ".\n")
    if split == "heldout":
        out.append(" ".join(loc.months["format"]["wide"].values()) + "\n")
        out.append(" ".join(loc.days["format"]["wide"].values()) + "\n")
    return out


def _units(loc: object) -> dict[str, str]:
    data = getattr(loc, "_data", {}).get("unit_display_names", {})
    out = {}
    for k, v in data.items():
        if isinstance(v, dict) and isinstance(v.get("long"), str):
            out[k] = v["long"]
    return out


def script_samples(cls: str, split: str, rng: random.Random) -> Iterator[tuple[str, str]]:
    stem, calib_locales, held_locales = SCRIPTS[cls]
    written = (WRITTEN / f"{stem}.{split}.txt").read_text(encoding="utf-8")
    for para in written.split("\n\n"):
        if para.strip():
            yield para.strip() + "\n", f"written/{stem}.{split}.txt"
    # name lists add vocabulary; hand-written prose stays the larger part of each class
    locales = calib_locales if split == "calibration" else held_locales
    for loc in locales:
        lines = _cldr_text(loc, split)
        rng.shuffle(lines)
        for chunk in _limit(_chunks("".join(lines), 300), CLDR_CHARS // len(locales)):
            yield chunk, f"CLDR via babel ({loc}; {CLDR_FIELDS[split]})"


#: the CLDR fields each split draws on
CLDR_FIELDS = {"calibration": "territories, languages", "heldout": "currencies, scripts, units, months, days"}
#: CLDR characters per script class and split: name lists (transliterated names cost more per
#: character than prose) stay at most a third of a class; the hand-written prose is 400-900 characters
CLDR_CHARS = 300
#: calibration only: scripts the held-out set does not test, so that their lead bytes are fitted
OTHER_LOCALES = ("el", "he", "th", "ka", "vi", "hy", "pl", "de", "fr", "tr", "cs", "am")


def other_script_samples(rng: random.Random) -> Iterator[tuple[str, str]]:
    for loc in OTHER_LOCALES:
        lines = _cldr_text(loc, "calibration")
        rng.shuffle(lines)
        for chunk in _limit(_chunks("".join(lines), 400), 1_200):
            yield chunk, f"CLDR via babel ({loc}; territories, languages)"


# --- emoji chat ---------------------------------------------------------------------------------

CHAT = {
    "calibration": [
        "lol that build finally passed",
        "can you review my PR when you get a sec",
        "omg the demo went great",
        "brb grabbing coffee",
        "nice work on the release!",
        "who broke main again",
        "happy friday everyone",
        "the meeting is moved to 3pm",
        "thanks so much, that fixed it",
        "ugh the tests are flaky again",
        "pizza in the kitchen",
        "ship it",
        "good morning team",
        "I'm out sick today, sorry",
        "congrats on the new job!!",
    ],
    "heldout": [
        "just landed, see you all tomorrow",
        "did anyone else get the outage alert",
        "my cat walked over the keyboard and pushed to prod",
        "weekend plans?",
        "that bug was sneaky",
        "the new office plants look amazing",
        "coffee machine is broken again",
        "love this idea, let's do it",
        "running late, stuck in traffic",
        "we hit 10k users today",
        "happy birthday Sam",
        "can't believe it's already december",
        "the rollback worked, phew",
        "who wants lunch",
        "see you at the offsite",
    ],
}


def _emoji_pool() -> list[str]:
    pool = []
    for lo, hi in ((0x1F600, 0x1F64F), (0x1F300, 0x1F5FF), (0x1F680, 0x1F6C5), (0x1F90C, 0x1F9FF)):
        pool += [chr(c) for c in range(lo, hi + 1) if unicodedata.name(chr(c), "")]
    pool += [chr(c) + "\ufe0f" for c in (0x2764, 0x2705, 0x2728, 0x26A1, 0x2600, 0x270C, 0x261D)]
    return pool


def emoji_samples(split: str, rng: random.Random) -> Iterator[tuple[str, str]]:
    pool = _emoji_pool()
    tones = [chr(c) for c in range(0x1F3FB, 0x1F400)]
    flags = [
        "".join(chr(0x1F1E6 + ord(ch) - 65) for ch in cc) for cc in ("US", "FR", "JP", "BR", "DE", "IN", "UA")
    ]
    zwj = [
        "\U0001f468\u200d\U0001f469\u200d\U0001f467",
        "\U0001f3f3\ufe0f\u200d\U0001f308",
        "\U0001f469\u200d\U0001f4bb",
    ]
    names = ["ana", "bo", "chen", "dmitri", "eli", "fatima", "gus", "hana"]
    for _ in range(60):
        lines = []
        for _ in range(rng.randint(4, 9)):
            msg = rng.choice(CHAT[split])
            k = rng.random()
            if k < 0.15:
                msg = "".join(rng.choice(pool) for _ in range(rng.randint(1, 4)))
            elif k < 0.3:
                msg += " " + rng.choice(pool) + rng.choice(tones)
            elif k < 0.4:
                msg += " " + rng.choice(flags + zwj)
            else:
                msg += " " + "".join(rng.choice(pool) for _ in range(rng.randint(1, 3)))
            lines.append(f"{rng.choice(names)}: {msg}")
        yield "\n".join(lines) + "\n", f"chat lines written for the {split} split + emoji from unicodedata"


# --- URLs -----------------------------------------------------------------------------------------


def url_samples(split: str, rng: random.Random) -> Iterator[tuple[str, str]]:
    mods = sorted(m for m in sys.stdlib_module_names if m.isidentifier() and not m.startswith("_"))
    words = [m.replace("_", "-") for i, m in enumerate(mods) if i % 2 == (0 if split == "calibration" else 1)]
    tlds = ["com", "org", "io", "net", "dev", "co.uk", "de", "app"]
    keys = ["q", "page", "id", "ref", "lang", "sort", "utm_source", "utm_medium", "utm_campaign", "session"]

    def url() -> str:
        host = ".".join(rng.sample(words, rng.randint(1, 2))) + "." + rng.choice(tlds)
        if rng.random() < 0.4:
            host = rng.choice(["www", "api", "docs", "cdn", "static"]) + "." + host
        path = "/".join(rng.choice(words) for _ in range(rng.randint(1, 5)))
        r = rng.random()
        if r < 0.2:
            path += "/" + hashlib.sha1(path.encode()).hexdigest()[: rng.choice((7, 40))]
        elif r < 0.35:
            path += f"/{rng.randint(1, 99999)}"
        elif r < 0.45:
            path += "/" + str(random.Random(rng.random()).getrandbits(128).to_bytes(16, "big").hex())
        u = f"https://{host}/{path}"
        if rng.random() < 0.5:
            qs = []
            for _ in range(rng.randint(1, 4)):
                k = rng.choice(keys)
                v = rng.choice(words) if rng.random() < 0.6 else str(rng.randint(0, 10 ** rng.randint(1, 8)))
                if rng.random() < 0.15:
                    v = "%20".join(rng.sample(words, 2))
                qs.append(f"{k}={v}")
            u += "?" + "&".join(qs)
        if rng.random() < 0.2:
            u += "#" + rng.choice(words)
        return u

    for i in range(70):
        style = i % 3
        urls = [url() for _ in range(rng.randint(4, 10))]
        if style == 0:
            text = "\n".join(urls)
        elif style == 1:
            text = "\n".join(f"- [{rng.choice(words)}]({u})" for u in urls)
        else:
            text = " ".join(f"see {u}" if j % 2 else u for j, u in enumerate(urls))
        half = "even" if split == "calibration" else "odd"
        yield text + "\n", f"generated from the {half}-indexed names of sys.stdlib_module_names"


# --- minified JavaScript (JupyterLab's bundles) ---------------------------------------------------


def minjs_samples(split: str, rng: random.Random) -> Iterator[tuple[str, str]]:
    files = sorted((_site("jupyterlab") / "static").glob("*.js"))
    files = [f for i, f in enumerate(files) if i % 2 == (0 if split == "calibration" else 1)]
    rng.shuffle(files)
    for f in files[:60]:
        text = f.read_text(encoding="utf-8", errors="replace")
        if not text.isascii() or len(text) < 3000:
            continue
        start = rng.randrange(0, len(text) - 1000)
        yield text[start : start + 1000], f"jupyterlab/static/{f.name} (BSD-3-Clause)"


# --- CSV ------------------------------------------------------------------------------------------


def csv_samples(split: str, rng: random.Random) -> Iterator[tuple[str, str]]:
    if split == "calibration":
        countries = ["US", "DE", "FR", "JP", "BR", "IN", "GB", "CA"]
        products = ["widget", "gadget", "sprocket", "flange", "gizmo", "doohickey"]
        for _ in range(25):
            rows = ["order_id,date,customer,product,qty,unit_price,country,status"]
            for _ in range(rng.randint(10, 30)):
                rows.append(
                    f"{rng.randint(10000, 99999)},2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d},"
                    f"cust_{rng.randint(1, 5000)},{rng.choice(products)},{rng.randint(1, 40)},"
                    f"{rng.uniform(1, 500):.2f},{rng.choice(countries)},{rng.choice(['paid', 'shipped', 'refunded'])}"
                )
            yield "\n".join(rows) + "\n", "generated (orders)"
        npdir = _site("numpy") / "random" / "tests" / "data"
        for f in sorted(npdir.glob("*testset-1.csv"))[:4]:
            yield f.read_text()[:1500], f"numpy/random/tests/data/{f.name} (BSD-3-Clause)"
    else:
        sample = _site("matplotlib") / "mpl-data" / "sample_data"
        for name in ("Stocks.csv", "msft.csv", "data_x_x2_x3.csv"):
            for chunk in _chunks((sample / name).read_text(encoding="utf-8"), 1500)[:8]:
                yield chunk, f"matplotlib/mpl-data/sample_data/{name} (matplotlib licence)"
        for _ in range(15):
            rows = ["sensor,timestamp,temperature_c,humidity_pct,pressure_hpa,battery_v,ok"]
            for _ in range(rng.randint(10, 30)):
                rows.append(
                    f"s-{rng.randint(1, 64):03d},{1700000000 + rng.randint(0, 10**7)},{rng.gauss(21, 4):.1f},"
                    f"{rng.uniform(20, 90):.0f},{rng.gauss(1013, 8):.1f},{rng.uniform(3.1, 4.2):.3f},"
                    f"{rng.choice(['true', 'false'])}"
                )
            yield "\n".join(rows) + "\n", "generated (sensor readings)"


# --- hex ------------------------------------------------------------------------------------------


def hex_samples(split: str, rng: random.Random) -> Iterator[tuple[str, str]]:
    for i in range(40):
        if split == "calibration":
            if i % 2:
                lines = [
                    f"sha256:{hashlib.sha256(rng.randbytes(16)).hexdigest()}  file_{j}.bin" for j in range(8)
                ]
                yield "\n".join(lines) + "\n", "generated (digest lists)"
            else:
                yield rng.randbytes(rng.randint(100, 700)).hex() + "\n", "generated (hex of random bytes)"
        else:
            src = inspect.getsource(rng.choice([json, difflib, ast, base64]))
            raw = zlib.compress(src.encode())[: rng.randint(160, 640)] if i % 2 else src.encode()[:480]
            if i % 3 == 0:
                lines = [
                    f"{off:08x}: "
                    + " ".join(raw[off + k : off + k + 2].hex() for k in range(0, 16, 2))
                    + "  "
                    + "".join(chr(b) if 32 <= b < 127 else "." for b in raw[off : off + 16])
                    for off in range(0, len(raw), 16)
                ]
                yield "\n".join(lines) + "\n", "xxd-style dump of stdlib source / its zlib bytes"
            elif i % 3 == 1:
                words = [raw[k : k + 4].hex() for k in range(0, len(raw), 4)]
                yield " ".join("0x" + w for w in words) + "\n", "0x-words of stdlib source / its zlib bytes"
            else:
                yield raw.hex(" ", 1) + "\n", "spaced hex bytes of stdlib source / its zlib bytes"


# --- diffs (this repository's history) ------------------------------------------------------------


def diff_samples(split: str, rng: random.Random, repo: Path) -> Iterator[tuple[str, str]]:
    commits = subprocess.run(
        ["git", "-C", str(repo), "log", "--reverse", "--no-merges", "--format=%H", "main"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    chosen = [c for i, c in enumerate(commits) if i % 2 == (0 if split == "calibration" else 1)]
    n = 0
    for c in chosen:
        patch = subprocess.run(
            ["git", "-C", str(repo), "show", "--format=", "-U3", c, "--", "*.py"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        hunks = re.split(r"(?=^diff --git )", patch, flags=re.M)
        for h in hunks:
            if h.startswith("diff --git") and len(h) > 400 and h.isascii():
                yield h[:2500], f"git show {c[:10]} (this repository, MIT)"
                n += 1
                break
        if n >= 20:
            break


# --- stack traces -------------------------------------------------------------------------------

_PY_FAILURES: dict[str, list[Callable[[], object]]] = {
    "calibration": [
        lambda: json.loads('{"a": [1, 2,, 3]}'),
        lambda: ast.literal_eval("os.system('x')"),
        lambda: base64.b64decode("abc", validate=True),
        lambda: int("12x"),
        lambda: {}["missing_key"],
        lambda: difflib.SequenceMatcher(None, 1, 2).ratio(),
    ],
    "heldout": [
        lambda: json.dumps({"k": object()}),
        lambda: re.compile("(unclosed"),
        lambda: zlib.decompress(b"not zlib data"),
        lambda: [].pop(),
        lambda: __import__("no_such_module_xyz"),
        lambda: ast.parse("def f(:\n  pass"),
    ],
}


def _py_trace(fn: Callable[[], object], chained: bool) -> str:
    try:
        try:
            fn()
        except Exception as exc:
            if chained:
                raise RuntimeError("while handling the request") from exc
            raise
    except Exception:
        text = traceback.format_exc()
    else:  # pragma: no cover
        text = ""
    text = re.sub(r'File "[^"]*/(lib/python3\.\d+/)', r'File "/usr/\1', text)
    text = re.sub(r'File "[^"]*make_textsets\.py"', 'File "/srv/app/handlers.py"', text)
    return text


def trace_samples(split: str, rng: random.Random) -> Iterator[tuple[str, str]]:
    fails = _PY_FAILURES[split]
    for i in range(24):
        yield (
            _py_trace(fails[i % len(fails)], chained=bool(i % 3 == 0)),
            f"Python tracebacks of the {split} split's failing stdlib calls",
        )
    classes = ["OrderService", "PaymentGateway", "UserRepository", "CacheLoader", "HttpClient", "JobRunner"]
    methods = ["process", "handle", "load", "execute", "apply", "validate", "lambda$run$0"]
    for _ in range(20):
        frames = []
        if split == "calibration":  # Java
            head = rng.choice(
                [
                    'java.lang.NullPointerException: Cannot invoke "String.length()" because "name" is null',
                    "java.lang.IllegalStateException: Connection pool exhausted",
                    "java.io.IOException: Broken pipe",
                ]
            )
            for _ in range(rng.randint(5, 14)):
                cls = rng.choice(classes)
                frames.append(
                    f"\tat com.example.{cls.lower()}.{cls}.{rng.choice(methods)}({cls}.java:{rng.randint(20, 900)})"
                )
            yield head + "\n" + "\n".join(frames) + "\n", "generated (Java-style)"
        else:  # Node.js
            head = rng.choice(
                [
                    "TypeError: Cannot read properties of undefined (reading 'map')",
                    "Error: connect ECONNREFUSED 127.0.0.1:5432",
                    "RangeError: Maximum call stack size exceeded",
                ]
            )
            for _ in range(rng.randint(5, 14)):
                fn = rng.choice(methods) + rng.choice(classes)
                frames.append(
                    f"    at {fn} (/srv/app/src/{rng.choice(classes).lower()}.js:{rng.randint(1, 400)}:{rng.randint(1, 80)})"
                )
            frames.append("    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)")
            yield head + "\n" + "\n".join(frames) + "\n", "generated (Node.js-style)"


# --- digit-heavy logs -----------------------------------------------------------------------------


def numlog_samples(split: str, rng: random.Random) -> Iterator[tuple[str, str]]:
    def ip() -> str:
        return ".".join(str(rng.randint(1, 254)) for _ in range(4))

    for _ in range(40):
        lines = []
        t = 1_700_000_000 + rng.randint(0, 10**7)
        for _ in range(rng.randint(8, 20)):
            t += rng.randint(0, 5000) / 1000
            if split == "calibration":
                if rng.random() < 0.5:
                    lines.append(
                        f"{ip()} - - [12/Mar/2024:{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d} +0000] "
                        f'"GET /api/v1/items/{rng.randint(1, 99999)} HTTP/1.1" {rng.choice([200, 200, 304, 404, 500])} '
                        f"{rng.randint(100, 99999)} {rng.uniform(0.001, 2):.3f}"
                    )
                else:
                    lines.append(
                        f"2024-03-12 {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d},"
                        f"{rng.randint(0, 999):03d} INFO [worker-{rng.randint(1, 16)}] processed "
                        f"{rng.randint(1, 50000)} items in {rng.uniform(0.1, 999):.1f} ms (batch {rng.randint(1, 9999)})"
                    )
            else:
                r = rng.random()
                if r < 0.35:
                    lines.append(
                        f"[{t - 1_700_000_000:12.6f}] eth0: rx {rng.randint(0, 10**9)} tx {rng.randint(0, 10**9)} "
                        f"drop {rng.randint(0, 99)} irq {rng.randint(16, 255)}"
                    )
                elif r < 0.7:
                    lines.append(
                        f"ts={int(t * 1000)} cpu={rng.uniform(0, 100):.2f} mem_mb={rng.randint(100, 65536)} "
                        f"rss={rng.randint(10**6, 10**10)} gc_pause_us={rng.randint(10, 99999)} pid={rng.randint(100, 65535)}"
                    )
                else:
                    lines.append(
                        f"2025-11-{rng.randint(1, 30):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:"
                        f"{rng.randint(0, 59):02d}.{rng.randint(0, 999999):06d}Z pod/api-{rng.randint(1000, 9999)}-"
                        f"{rng.randint(10000, 99999)} restarts={rng.randint(0, 30)} latency_p99={rng.randint(1, 5000)}ms "
                        f"{ip()}:{rng.randint(1024, 65535)}"
                    )
        kinds = "access and app log lines" if split == "calibration" else "kernel, metrics and pod log lines"
        yield "\n".join(lines) + "\n", f"generated ({kinds})"


# --- English prose and Python code from the standard library ------------------------------------


def _stdlib_modules(split: str) -> list[object]:
    import importlib

    names = [
        "argparse", "asyncio", "collections", "csv", "dataclasses", "datetime", "decimal", "email",
        "functools", "heapq", "http.client", "inspect", "itertools", "json", "logging", "pathlib",
        "pickle", "shutil", "socket", "sqlite3", "string", "subprocess", "tarfile", "textwrap",
        "threading", "typing", "unittest", "urllib.parse", "uuid", "zipfile",
    ]  # fmt: skip
    names = [n for i, n in enumerate(names) if i % 2 == (0 if split == "calibration" else 1)]
    return [importlib.import_module(n) for n in names]


def docs_samples(split: str, rng: random.Random) -> Iterator[tuple[str, str]]:
    for mod in _stdlib_modules(split):
        docs = []
        for _, obj in inspect.getmembers(mod):
            own = getattr(obj, "__module__", None) == mod.__name__  # not re-exported names
            raw = obj.__doc__ if own and (inspect.isfunction(obj) or inspect.isclass(obj)) else None
            doc = inspect.cleandoc(raw) if isinstance(raw, str) else None  # its own, never inherited
            if doc and len(doc) > 300 and doc.isascii() and ">>>" not in doc:
                docs.append(doc)
        rng.shuffle(docs)
        for d in docs[:3]:
            yield d[:2000] + "\n", f"docstrings of the Python standard library ({mod.__name__}, PSF licence)"


def code_samples(split: str, rng: random.Random) -> Iterator[tuple[str, str]]:
    for mod in _stdlib_modules(split):
        src = inspect.getsource(mod)  # type: ignore[arg-type]
        chunks = [c for c in _chunks(src, 1800) if c.isascii()]
        for c in rng.sample(chunks, min(2, len(chunks))):
            yield c, f"source of the Python standard library ({mod.__name__}, PSF licence)"


# --- all ------------------------------------------------------------------------------------------


def build(split: str, repo: Path) -> list[dict[str, str]]:
    from ctxlab.cli.bench.samples import CALIBRATION_ONLY_CLASSES, TEXTSET_CLASSES

    out = []
    classes = TEXTSET_CLASSES + (CALIBRATION_ONLY_CLASSES if split == "calibration" else ())
    for cls in classes:
        rng = random.Random(f"{SEED[split]}:{cls}")
        if cls == "other-scripts":
            gen: Iterator[tuple[str, str]] = other_script_samples(rng)
        elif cls in SCRIPTS:
            gen = script_samples(cls, split, rng)
        elif cls == "diffs":
            gen = diff_samples(split, rng, repo)
        else:
            gen = {
                "emoji": emoji_samples,
                "urls": url_samples,
                "minjs": minjs_samples,
                "csv": csv_samples,
                "hex": hex_samples,
                "traces": trace_samples,
                "numlogs": numlog_samples,
                "docs": docs_samples,
                "pycode": code_samples,
            }[cls](split, rng)
        total = 0
        for text, source in gen:
            if total >= 16_000:
                break
            out.append({"cls": cls, "source": source, "text": text})
            total += len(text)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", default=str(HERE.parent), help="the ctxlab checkout (for its git history)")
    args = ap.parse_args()
    dest = Path(args.repo) / "ctxlab" / "cli" / "bench" / "textsets"
    dest.mkdir(parents=True, exist_ok=True)
    for split in SPLITS:
        rows = build(split, Path(args.repo))
        path = dest / f"{split}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        by: dict[str, int] = {}
        for r in rows:
            by[r["cls"]] = by.get(r["cls"], 0) + len(r["text"])
        print(
            f"{path}: {len(rows)} samples, {path.stat().st_size:,} bytes; "
            + ", ".join(f"{k} {v:,}" for k, v in by.items())
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
