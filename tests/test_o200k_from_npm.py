"""tools/o200k_from_npm.py rebuilds a tiktoken ranks file from js-tiktoken's compressed ranks module."""

from __future__ import annotations

import base64
from types import ModuleType

from tools import o200k_from_npm


def _module() -> ModuleType:
    return o200k_from_npm


def test_runs_of_tokens_become_one_line_per_rank_in_rank_order() -> None:
    b = [base64.b64encode(t).decode() for t in (b"a", b"b", b"c", b"hello", b" world")]
    js = (
        'export default {"pat_str":"x","bpe_ranks":"! 3 '
        + " ".join(b[3:])
        + "\\n! 0 "
        + " ".join(b[:3])
        + '"};'
    )
    out = _module().ranks_file(js).decode().splitlines()
    assert out == [f"{b[0]} 0", f"{b[1]} 1", f"{b[2]} 2", f"{b[3]} 3", f"{b[4]} 4"]


def test_the_expected_hash_is_tiktokens_own() -> None:
    import inspect

    import tiktoken_ext.openai_public as public

    assert _module().EXPECTED_SHA256 in inspect.getsource(public.o200k_base)
