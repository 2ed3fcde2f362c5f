"""The baseline command of bench section 3: load transcript files and tiktoken-encode their texts once.

``python -m ctxlab.cli.bench.tiktoken_pass FILE...`` starts Python, imports the loaders that
``ctxlab replay`` uses (:func:`ctxlab.transcripts.load_many`), loads the same files and encodes
every text an estimator sees (:func:`text_units`: message texts and tool-call argument JSON)
once with cl100k_base, then prints one JSON line: ``{"files", "transcripts", "texts", "chars",
"encode_seconds"}`` (characters; seconds of the encoding alone).  Section 3 times this command
as a whole next to ``ctxlab replay`` over the same files: the command's time over this one is
a whole-process comparison (start-up, imports and loading on both sides).

Exit status 0; 2 when a file fails to load (its error on stderr).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["main", "text_units"]


def text_units(transcripts: Sequence[Any]) -> list[str]:
    """Every text an estimator sees in ``transcripts`` (:class:`~ctxlab.transcripts.base.Transcript`),
    in order: each message's text (:func:`ctxlab.core.messages.message_text`) and each tool
    call's arguments as JSON (``ensure_ascii=False``)."""
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


def main(argv: Sequence[str] | None = None) -> int:
    """Load the files given as arguments, encode their texts once, print the JSON line."""
    from ctxlab.cli.bench.timing import cl100k_encoding
    from ctxlab.transcripts import load_many

    files = list(sys.argv[1:] if argv is None else argv)
    transcripts, errors = load_many(files)
    for e in errors:
        print(f"tiktoken_pass: {e}", file=sys.stderr)
    units = text_units(transcripts)
    enc = cl100k_encoding()
    t0 = time.perf_counter()
    for u in units:
        enc.encode_ordinary(u)
    seconds = time.perf_counter() - t0
    record = {
        "files": len(files),
        "transcripts": len(transcripts),
        "texts": len(units),
        "chars": sum(len(u) for u in units),
        "encode_seconds": round(seconds, 4),
    }
    print(json.dumps(record))
    return 2 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
