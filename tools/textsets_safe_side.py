"""The text classes an estimator under-counts where it hurts (issue 30): repetitive text, minified
JSON and base64, in both splits of the estimator's text sets.

    .venv/bin/python -m tools.textsets_safe_side

Writes their samples into ``ctxlab/cli/bench/textsets/{calibration,heldout}.jsonl`` in place of
any rows of these classes (the other classes are left as they are; ``tools/make_textsets.py``
builds everything and calls :func:`samples` too).  Generated offline and deterministically
(fixed seeds); the two splits share no source:

* ``repetitive`` — the same seven kinds in both splits, with no character, pattern, phrase or
  line in common (:data:`_REPETITIVE`): runs of one character inside a sentence, short letter
  patterns repeated without blanks (``hahaha``), repeated phrases, one log line or stack frame
  repeated, separator lines and tables, blank lines with indentation and zero padding, progress
  bars of block characters.  Generated.
* ``minjson`` — calibration: the even-indexed JupyterLab settings schemas, minified, and
  generated order records; held-out: the odd-indexed schemas, the nbformat and JSON Schema
  meta-schemas, minified, and generated event records.  BSD-3-Clause (JupyterLab, nbformat),
  MIT (jsonschema-specifications).
* ``base64`` — base64 of random bytes, of zlib-compressed bytes, of the Python standard
  library's source text (other modules per split, :data:`_B64_MODULES`) and of generated PNG
  images, one line, as data URLs, or wrapped (76 characters, MIME, in the calibration split; 64,
  PEM, in the held-out one).  Generated; Python standard library (PSF licence).
"""

from __future__ import annotations

import base64
import importlib
import inspect
import json
import random
import struct
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: the classes this module generates
CLASSES = ("repetitive", "minjson", "base64")
SEED = {"calibration": 31, "heldout": 37}
#: characters per class and split
CHARS = 24_000


def _site(pkg: str) -> Path:
    mod = __import__(pkg)
    return Path(str(mod.__file__)).resolve().parent


# --- repetitive text ------------------------------------------------------------------------------

#: per split: (characters of single-character runs, letter patterns repeated without blanks,
#: phrases, log lines, separator characters, block characters); the two splits share none
_REPETITIVE = {
    "calibration": (
        "aceglmoqsuwyBDFHJLNPRTVXZ!#%')+-/;=?[]_{}~ \n",
        ["lo", "xyz", "mm", "abab", "qwe", "zz"],
        ["test ", "data ", "foo ", "lorem ", "ok ", "null, ", "row;", "retry "],
        [
            "WARN retrying connection to db-1 (attempt 3 of 5)\n",
            "DEBUG cache miss for key user:1234\n",
            "INFO heartbeat ok\n",
        ],
        "=-*#~_",
        "▓─",
    ),
    "heldout": (
        'bdfhijknprtvxzACEGIKMOQSUWY"$&(*,.:<>@\\^`|\t',
        ["ha", "abc", "na", "hmm", "xo", "yes"],
        ["hello world ", "ping ", "na ", "yes ", "value, ", "step; "],
        [
            '  File "/srv/app/handlers.py", line 88, in handle\n    return self.dispatch(request)\n',
            "ERROR upstream timed out after 30000 ms\n",
        ],
        "+|.:^",
        "█═",
    ),
}


def repetitive(split: str, rng: random.Random) -> Iterator[tuple[str, str]]:
    chars, patterns, phrases, lines, seps, blocks = _REPETITIVE[split]
    for i in range(400):
        kind = i % 7
        if kind == 0:  # a run of one character inside a sentence
            c = rng.choice(chars)
            yield (
                f"value {i}: {c * rng.randint(40, 3000)} end of value\n",
                "generated (single-character runs)",
            )
        elif kind == 1:  # a short letter pattern repeated without blanks
            yield rng.choice(patterns) * rng.randint(20, 600), "generated (letter patterns)"
        elif kind == 2:
            yield rng.choice(phrases) * rng.randint(20, 400), "generated (repeated phrases)"
        elif kind == 3:
            yield rng.choice(lines) * rng.randint(5, 60), "generated (one log line repeated)"
        elif kind == 4:  # separator lines and tables
            sep = rng.choice(seps)
            w = rng.randint(6, 30)
            rule = "+" + "+".join(sep * w for _ in range(3)) + "+"
            rows = [
                f"section {j}\n{sep * rng.randint(20, 120)}\n{rule}\n| a | b | c |"
                for j in range(rng.randint(2, 8))
            ]
            yield "\n".join(rows) + "\n", "generated (separators and tables)"
        elif kind == 5:  # blank lines, indentation, zero padding
            yield (
                "start\n"
                + "\n" * rng.randint(5, 300)
                + " " * rng.randint(5, 200)
                + "x = 1\n"
                + "0" * rng.randint(10, 800)
                + "\n",
                "generated (blank lines, indentation, zero padding)",
            )
        else:  # progress bars of block characters
            c = rng.choice(blocks)
            bars = [f"[{c * k}{' ' * (30 - k)}] {k * 100 // 30}%" for k in range(0, 31, rng.randint(1, 4))]
            yield "\n".join(bars) + "\n", "generated (progress bars)"


# --- minified JSON --------------------------------------------------------------------------------


def _schemas() -> list[Path]:
    return sorted((_site("jupyterlab") / "schemas" / "@jupyterlab").glob("*/*.json"))


def minjson(split: str, rng: random.Random) -> Iterator[tuple[str, str]]:
    files = [f for i, f in enumerate(_schemas()) if i % 2 == (0 if split == "calibration" else 1)]
    if split == "heldout":
        files += sorted((_site("nbformat") / "v4").glob("*.json"))
        files += sorted((_site("jsonschema_specifications") / "schemas").rglob("*.json"))
    out: list[tuple[str, str]] = []
    for f in files:
        text = json.dumps(
            json.loads(f.read_text(encoding="utf-8")), separators=(",", ":"), ensure_ascii=False
        )
        if len(text) < 300:
            continue
        start = rng.randrange(0, max(1, len(text) - 1500))
        label = f.relative_to(f.parents[2]).as_posix()
        out.append((text[start : start + 1500], f"{label} minified"))
    for i in range(60):
        if split == "calibration":
            recs = [
                {
                    "order": rng.randint(10**5, 10**6),
                    "sku": f"SKU-{rng.randint(100, 999)}",
                    "qty": rng.randint(1, 9),
                    "price": round(rng.uniform(1, 300), 2),
                    "tags": rng.sample(["new", "sale", "gift", "bulk"], 2),
                }
                for _ in range(rng.randint(3, 12))
            ]
            out.append(
                (json.dumps({"orders": recs, "page": i}, separators=(",", ":")), "generated (order records)")
            )
        else:
            recs = [
                {
                    "ts": 1_700_000_000_000 + rng.randint(0, 10**9),
                    "event": rng.choice(["click", "view", "purchase", "signup"]),
                    "user": {"id": rng.randint(1, 10**7), "country": rng.choice(["de", "jp", "br", "us"])},
                    "props": {"ok": rng.random() < 0.8, "ms": rng.randint(1, 5000)},
                }
                for _ in range(rng.randint(3, 10))
            ]
            out.append((json.dumps(recs, separators=(",", ":")), "generated (event records)"))
    rng.shuffle(out)
    yield from out


# --- base64 ---------------------------------------------------------------------------------------


def _png(rng: random.Random, w: int, h: int) -> bytes:
    raw = b"".join(b"\x00" + rng.randbytes(w * 3) for _ in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    head = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    )


def _wrapped(text: str, width: int) -> str:
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


#: standard library modules whose source is base64-encoded, per split (disjoint)
_B64_MODULES = {
    "calibration": ["textwrap", "string", "json", "csv", "fnmatch"],
    "heldout": ["inspect", "random", "base64", "shlex", "difflib"],
}


def b64(split: str, rng: random.Random) -> Iterator[tuple[str, str]]:
    for i in range(200):
        kind = i % 4
        if kind == 0:
            data, what = rng.randbytes(rng.randint(200, 2500)), "random bytes"
        elif kind == 1:
            data, what = zlib.compress(rng.randbytes(rng.randint(300, 3000)) * 2), "zlib-compressed bytes"
        elif kind == 2:
            mod = importlib.import_module(rng.choice(_B64_MODULES[split]))
            src = inspect.getsource(mod).encode()
            start = rng.randrange(0, max(1, len(src) - 2000))
            data, what = (
                src[start : start + rng.randint(200, 2000)],
                f"stdlib source ({mod.__name__}, PSF licence)",
            )
        else:
            data, what = _png(rng, rng.randint(4, 24), rng.randint(4, 24)), "PNG images"
        text = base64.b64encode(data).decode()
        width = 76 if split == "calibration" else 64  # MIME / PEM
        if i % 3 == 0:
            text = _wrapped(text, width)
        elif kind == 3 and i % 3 == 1:
            text = f"data:image/png;base64,{text}"
        yield text, f"generated (base64 of {what})"


GENERATORS = {"repetitive": repetitive, "minjson": minjson, "base64": b64}

#: calibration only: more CJK vocabulary for the fit (traditional Chinese too), from the CLDR
#: fields the calibration split draws on (territories, languages; the held-out split draws on
#: others): class -> locales
CJK_CALIBRATION = {"chinese": ("zh", "zh_Hant"), "japanese": ("ja",), "korean": ("ko",)}
#: characters per locale
CJK_CHARS = 1500


def cjk_calibration() -> list[dict[str, str]]:
    """Extra calibration samples of the CJK classes (:data:`CJK_CALIBRATION`); the held-out split
    gets none (it keeps what ``tools/make_textsets.py`` gives it)."""
    from tools.make_textsets import _chunks, _cldr_text

    out: list[dict[str, str]] = []
    for cls, locales in CJK_CALIBRATION.items():
        for loc in locales:
            rng = random.Random(f"{SEED['calibration']}:{cls}:{loc}")
            lines = _cldr_text(loc, "calibration")
            rng.shuffle(lines)
            total = 0
            for chunk in _chunks("".join(lines), 300):
                if total >= CJK_CHARS:
                    break
                out.append(
                    {
                        "cls": cls,
                        "source": f"CLDR via babel ({loc}; territories, languages; issue 30)",
                        "text": chunk,
                    }
                )
                total += len(chunk)
    return out


def samples(split: str) -> list[dict[str, str]]:
    """The samples of :data:`CLASSES` in ``split``: about :data:`CHARS` characters per class."""
    out: list[dict[str, str]] = []
    for cls in CLASSES:
        rng = random.Random(f"{SEED[split]}:{cls}")
        total = 0
        for text, source in GENERATORS[cls](split, rng):
            if total >= CHARS:
                break
            if source.startswith("generated"):  # the split's own generator and vocabulary
                source = f"{source} [{split} generator, seed {SEED[split]}]"
            out.append({"cls": cls, "source": source, "text": text})
            total += len(text)
    return out


def main() -> int:
    dest = HERE.parent / "ctxlab" / "cli" / "bench" / "textsets"
    for split in ("calibration", "heldout"):
        path = dest / f"{split}.jsonl"
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        rows = [r for r in rows if r["cls"] not in CLASSES and "issue 30" not in r["source"]] + samples(split)
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        print(f"{path}: {len(rows)} samples, {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
