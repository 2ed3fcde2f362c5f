"""Summarizer replies cached on disk, so that re-running a replay does not pay for its summaries again.

:class:`SummaryCache` is a LangChain LLM cache (``langchain_core.caches.BaseCache``) set as the
summarizer model's ``cache``: LangChain looks every call up by the model's ``llm_string`` (its
class and parameters: the model name, temperature, ...) and the prompt (the summarizer's whole
input: template and cleaned history), and stores the reply after a miss.  The store is
LangGraph's ``SqliteCache`` (``langgraph.cache.sqlite``, from ``langgraph-checkpoint-sqlite``, a
lab dependency): one SQLite file, safe across threads; the key is the SHA-256 of the model string
and the prompt; the value is the reply as JSON (each generation's message through
``langchain_core.messages.message_to_dict``).  A reply
is kept until the file is deleted (no TTL).

``ctxlab replay``/``compare`` use one under ``<--out>/.ctxlab-cache/summaries.sqlite``
(:func:`default_cache_path`), ``--summary-cache DIR`` for another folder, ``--summary-cache off``
for none; hits and misses go to the provenance (``run.json``: ``summary_cache``).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.caches import BaseCache
from langchain_core.messages import message_to_dict, messages_from_dict
from langchain_core.outputs import ChatGeneration, Generation

__all__ = ["CACHE_DIR", "CACHE_FILE", "SummaryCache", "attach_cache", "default_cache_path"]

#: the run folder's cache folder (kept when the run is written again)
CACHE_DIR = ".ctxlab-cache"
#: the summary cache's file inside a cache folder
CACHE_FILE = "summaries.sqlite"
_NAMESPACE = ("ctxlab", "summaries")


def default_cache_path(out_dir: str | Path) -> Path:
    """``<out_dir>/.ctxlab-cache/summaries.sqlite``."""
    return Path(out_dir) / CACHE_DIR / CACHE_FILE


class SummaryCache(BaseCache):
    """A persistent LangChain LLM cache in one SQLite file (see the module doc).

    Args:
        path: the SQLite file (its folder is made).

    Attributes:
        hits, misses: lookups answered from the file, and not (each miss is one model call).
    """

    def __init__(self, path: str | Path) -> None:
        from langgraph.cache.sqlite import SqliteCache

        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._store: Any = SqliteCache(path=str(self.path))
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def _key(prompt: str, llm_string: str) -> tuple[tuple[str, ...], str]:
        digest = hashlib.sha256(f"{llm_string}\x00{prompt}".encode("utf-8", "surrogatepass")).hexdigest()
        return _NAMESPACE, digest

    def lookup(self, prompt: str, llm_string: str) -> Sequence[Generation] | None:
        key = self._key(prompt, llm_string)
        found = self._store.get([key]).get(key)
        with self._lock:
            if found is None:
                self.misses += 1
                return None
            self.hits += 1
        return [_generation(g) for g in json.loads(found)]

    def update(self, prompt: str, llm_string: str, return_val: Sequence[Generation]) -> None:
        value = json.dumps([_record(g) for g in return_val], ensure_ascii=False, default=str)
        self._store.set({self._key(prompt, llm_string): (value, None)})

    def clear(self, **kwargs: Any) -> None:
        self._store.clear()

    def stats(self) -> dict[str, Any]:
        """``{"path", "hits", "misses"}`` for the provenance."""
        return {"path": str(self.path), "hits": self.hits, "misses": self.misses}


def _record(g: Generation) -> dict[str, Any]:
    if isinstance(g, ChatGeneration):
        return {"message": message_to_dict(g.message), "info": g.generation_info}
    return {"text": g.text, "info": g.generation_info}


def _generation(record: dict[str, Any]) -> Generation:
    if "message" in record:
        return ChatGeneration(
            message=messages_from_dict([record["message"]])[0], generation_info=record.get("info")
        )
    return Generation(text=record["text"], generation_info=record.get("info"))


def attach_cache(model: Any, path: str | Path | None) -> SummaryCache | None:
    """Give a chat model a :class:`SummaryCache` at ``path`` (``None``: none) and return it.

    Only a LangChain chat model (``BaseChatModel``, which has a ``cache`` field) takes one; any
    other summarizer (the offline structured summarizer, an object with ``summarize``) is left as
    it is and ``None`` is returned.
    """
    from langchain_core.language_models import BaseChatModel

    if path is None or not isinstance(model, BaseChatModel):
        return None
    cache = SummaryCache(path)
    model.cache = cache
    return cache
