"""The five "Agent Context" fields (spec R1, R2) and the summary language: defaults, validation
messages, admin flag, templates."""

from __future__ import annotations

import dataclasses
import math
import re
import warnings

import pytest

from ctxlab import (
    SUMMARY_PROMPT_EN,
    SUMMARY_PROMPT_ZH,
    CompressionMiddleware,
    CompressionSettings,
    SettingsError,
)
from ctxlab.core.settings import ADMIN_ONLY, ARG_TRUNCATE_CHARS

FIELDS = [
    "summary_threshold",
    "summary_keep_messages",
    "summary_prompt",
    "summary_tool_result_token_limit",
    "summary_l2_trigger_ratio",
    "summary_language",
    "summary_prepare_ratio",
    "summary_prepare_wait_s",
]


def test_defaults():
    # spec: R1 — the five fields and their defaults
    s = CompressionSettings()
    assert [f.name for f in dataclasses.fields(s)] == FIELDS
    assert s.summary_threshold == 100
    assert s.summary_keep_messages == 10
    assert s.summary_prompt is None  # the built-in template of the summary language
    assert s.summary_language == "auto"
    assert s.prompt_for("zh") == SUMMARY_PROMPT_ZH and s.prompt_for("en") == SUMMARY_PROMPT_EN
    assert s.summary_tool_result_token_limit == 300
    assert s.summary_l2_trigger_ratio == 0.4
    assert s.entry_threshold_tokens == 100 * 1024  # T
    assert s.l2_threshold_tokens == pytest.approx(100 * 1024 * 0.4)  # T2


def test_positional_calls_keep_the_seeds_field_order():
    # spec: R1 — the five fields in the seed's order; the summary language, added later, comes
    # last, so that a positional call written for the five fields keeps its meaning (issue 30)
    s = CompressionSettings(4, 3, None, 120, 0.6)
    assert (s.summary_threshold, s.summary_keep_messages, s.summary_prompt) == (4, 3, None)
    assert s.summary_tool_result_token_limit == 120 and s.summary_l2_trigger_ratio == 0.6
    assert s.summary_language == "auto"
    assert CompressionSettings(4, 3, None, 120, 0.6, "zh").summary_language == "zh"


def test_admin_only_fields():
    # spec: R1 — metadata marks every field administrator-only; the toolkit exposes the flag
    assert CompressionSettings.admin_only_fields() == FIELDS
    assert all(f.metadata[ADMIN_ONLY] is True for f in dataclasses.fields(CompressionSettings))


def test_preparation_fields_are_keyword_only_and_off_by_default():
    # issue 34: added at the end and keyword-only, so that positional calls keep their meaning
    # (the seed's five in its order, then summary_language: issue 30)
    s = CompressionSettings(50, 4, None, 200, 0.5, "en")
    assert (s.summary_threshold, s.summary_keep_messages, s.summary_l2_trigger_ratio) == (50, 4, 0.5)
    assert s.summary_language == "en"
    assert s.summary_prepare_ratio is None and s.summary_prepare_wait_s == 30.0
    with pytest.raises(TypeError):
        CompressionSettings(50, 4, None, 200, 0.5, "en", 0.8)  # type: ignore[misc]
    on = CompressionSettings(summary_prepare_ratio=0.8, summary_prepare_wait_s=0)
    assert on.summary_prepare_ratio == 0.8 and on.summary_prepare_wait_s == 0
    assert on.replace(summary_prepare_ratio=None).summary_prepare_ratio is None
    assert CompressionSettings.from_mapping({"summary_prepare_ratio": 0.6}).summary_prepare_ratio == 0.6


def test_argument_limit_is_an_internal_constant():
    # spec: R1/R5 — the 2,000-character limit is a constant, not a setting
    assert ARG_TRUNCATE_CHARS == 2000
    assert not any(
        "2000" in str(f.default) or "arg" in f.name for f in dataclasses.fields(CompressionSettings)
    )


@pytest.mark.parametrize(
    ("field", "value", "range_words"),
    [
        ("summary_threshold", 0, "positive"),
        ("summary_threshold", -5, "positive"),
        ("summary_threshold", math.nan, "positive"),
        ("summary_threshold", math.inf, "positive"),
        ("summary_threshold", "100", "positive"),
        ("summary_threshold", True, "positive"),
        ("summary_threshold", None, "positive"),
        ("summary_keep_messages", -1, ">= 0"),
        ("summary_keep_messages", 1.5, ">= 0"),
        ("summary_keep_messages", "10", ">= 0"),
        ("summary_keep_messages", True, ">= 0"),
        ("summary_prompt", "Summarize the conversation.", "{messages}"),
        ("summary_prompt", "Summarize {message}", "{messages}"),
        ("summary_prompt", 42, "{messages}"),
        ("summary_language", "fr", "one of ['auto', 'zh', 'en']"),
        ("summary_language", "ZH", "one of ['auto', 'zh', 'en']"),
        ("summary_language", None, "one of ['auto', 'zh', 'en']"),
        ("summary_tool_result_token_limit", 0, "> 0"),
        ("summary_tool_result_token_limit", -300, "> 0"),
        ("summary_tool_result_token_limit", 2.5, "> 0"),
        ("summary_l2_trigger_ratio", 0, "> 0"),
        ("summary_l2_trigger_ratio", -0.4, "> 0"),
        ("summary_l2_trigger_ratio", math.nan, "finite"),
        ("summary_l2_trigger_ratio", math.inf, "finite"),
        ("summary_l2_trigger_ratio", "0.4", "> 0"),
        ("summary_prepare_ratio", 0, "strictly between 0 and 1"),
        ("summary_prepare_ratio", 1, "strictly between 0 and 1"),
        ("summary_prepare_ratio", 1.5, "strictly between 0 and 1"),
        ("summary_prepare_ratio", math.nan, "strictly between 0 and 1"),
        ("summary_prepare_ratio", "0.8", "strictly between 0 and 1"),
        ("summary_prepare_ratio", True, "strictly between 0 and 1"),
        ("summary_prepare_wait_s", -1, ">= 0 (seconds)"),
        ("summary_prepare_wait_s", math.inf, ">= 0 (seconds)"),
        ("summary_prepare_wait_s", None, ">= 0 (seconds)"),
    ],
)
def test_invalid_values_name_the_field_and_the_range(field, value, range_words):
    # spec: R1/R2 — invalid input is a clear error at construction naming the field and range
    with pytest.raises(SettingsError) as info:
        CompressionSettings(**{field: value})
    err = info.value
    assert isinstance(err, ValueError)
    assert err.field == field
    assert field in str(err)
    assert range_words in str(err), str(err)
    # the same through the config-mapping path
    with pytest.raises(SettingsError, match=re.escape(field)):
        CompressionSettings.from_mapping({field: value})


@pytest.mark.parametrize("ratio", [0.05, 1.5, 5.0])
def test_ratio_outside_recommended_range_warns(ratio):
    # spec: settings table — outside 0.1-1.0 is allowed with a warning that names the field
    with pytest.warns(UserWarning) as rec:
        s = CompressionSettings(summary_l2_trigger_ratio=ratio)
    assert s.summary_l2_trigger_ratio == ratio
    msg = str(rec[0].message)
    assert "summary_l2_trigger_ratio" in msg and "0.1" in msg and "1.0" in msg


@pytest.mark.parametrize("ratio", [0.1, 0.4, 1.0])
def test_ratio_inside_recommended_range_is_silent(ratio):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CompressionSettings(summary_l2_trigger_ratio=ratio)


def test_valid_edges():
    s = CompressionSettings(
        summary_threshold=0.5,
        summary_keep_messages=0,
        summary_tool_result_token_limit=1,
        summary_l2_trigger_ratio=1.0,
    )
    assert s.entry_threshold_tokens == 512 and s.summary_keep_messages == 0
    # integral floats are accepted for the integer fields and stored as ints
    s2 = CompressionSettings(summary_keep_messages=3.0, summary_tool_result_token_limit=200.0)
    assert s2.summary_keep_messages == 3 and isinstance(s2.summary_keep_messages, int)
    assert s2.summary_tool_result_token_limit == 200 and isinstance(s2.summary_tool_result_token_limit, int)


def test_frozen_replace_and_mapping():
    s = CompressionSettings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.summary_threshold = 5  # type: ignore[misc]
    assert s.replace(summary_threshold=5).summary_threshold == 5
    with pytest.raises(SettingsError, match="summary_threshold"):
        s.replace(summary_threshold=-1)
    with pytest.raises(SettingsError, match="summary_treshold"):
        s.replace(summary_treshold=5)
    with pytest.raises(SettingsError, match="unknown_field"):
        CompressionSettings.from_mapping({"unknown_field": 1})
    # a misspelt field names the one meant, from a config mapping and from replace()
    with pytest.raises(SettingsError, match=r"did you mean 'summary_keep_messages'\?"):
        CompressionSettings.from_mapping({"summary_keep_mesages": 4})
    with pytest.raises(SettingsError, match=r"did you mean 'summary_threshold'\?"):
        s.replace(summary_treshold=5)
    assert CompressionSettings.from_mapping(s.to_dict()) == s


def test_middleware_refuses_something_that_is_not_settings():
    with pytest.raises(TypeError, match="CompressionSettings"):
        CompressionMiddleware(settings={"summary_threshold": 10})


def test_middleware_refuses_a_backend_that_cannot_write_and_takes_what_can(tmp_path):
    """The trial's case (s39): ``backend="workspace"`` was accepted and every offload and history
    write then failed at run time (28 times); now it is refused at construction, naming the field,
    what it got and what to give.  A backend, an async-only one and a factory are taken."""
    from pathlib import Path

    from deepagents.backends import FilesystemBackend, StateBackend

    for wrong in ("workspace", Path("workspace"), 42, {"root_dir": "w"}):
        with pytest.raises(TypeError, match=r"^backend must be a DeepAgents backend") as err:
            CompressionMiddleware(backend=wrong)
        assert type(wrong).__name__ in str(err.value)
    with pytest.raises(TypeError, match=r"FilesystemBackend\(root_dir='workspace', virtual_mode=True\)"):
        CompressionMiddleware(backend="workspace")

    class AsyncOnly:
        async def awrite(self, path: str, content: str) -> None: ...

    disk = FilesystemBackend(root_dir=str(tmp_path), virtual_mode=True)
    for right in (disk, AsyncOnly(), lambda runtime: StateBackend(), None):
        assert CompressionMiddleware(backend=right)._backend is right


def test_english_template_ships_beside_the_chinese_default():
    # spec: R2
    assert "{messages}" in SUMMARY_PROMPT_EN and "{messages}" in SUMMARY_PROMPT_ZH
    assert SUMMARY_PROMPT_EN != SUMMARY_PROMPT_ZH
    assert SUMMARY_PROMPT_EN.isascii()
    assert sum("\u4e00" <= ch <= "\u9fff" for ch in SUMMARY_PROMPT_ZH) > 50
    assert "summary" in SUMMARY_PROMPT_EN.lower()
    assert CompressionSettings(summary_prompt=SUMMARY_PROMPT_EN).summary_prompt == SUMMARY_PROMPT_EN


@pytest.mark.parametrize(
    ("prompt", "header", "must_not"),
    [
        (SUMMARY_PROMPT_EN, "[Context summary]", "上下文摘要"),
        (SUMMARY_PROMPT_ZH, "[上下文摘要]", "Context summary"),
    ],
)
def test_template_language_reaches_the_summarizer_and_the_summary(mw_kit, tmp_path, prompt, header, must_not):
    # spec: R2/R10 — the chosen template is what the summarizer is given; the summary framing
    # follows its language
    settings = CompressionSettings(
        summary_threshold=1,
        summary_keep_messages=2,
        summary_tool_result_token_limit=100,
        summary_prompt=prompt,
    )
    summ = mw_kit.FakeSummarizer()
    mw = CompressionMiddleware(settings=settings, backend=mw_kit.backend(tmp_path), summarizer=summ)
    msgs = [
        (mw_kit.HumanMessage if i % 2 == 0 else mw_kit.AIMessage)(
            mw_kit.fill(600, f"FACT-M{i}", i), id=f"m{i}"
        )
        for i in range(12)
    ]
    rec = mw_kit.Driver(mw, msgs).round()
    summary = rec["update"]["_summarization_event"]["summary_message"].content
    assert summary.startswith(header) and must_not not in summary
    before = prompt.split("{messages}")[0]
    assert summ.calls[0]["input"].startswith(before.strip()[:40])
    assert "FACT-M0" in summ.calls[0]["input"]


def test_a_custom_prompt_is_used_for_both_languages():
    custom = "Sum up briefly:\n{messages}"
    s = CompressionSettings(summary_prompt=custom)
    assert s.prompt_for("zh") == custom and s.prompt_for("en") == custom
    assert CompressionSettings.from_mapping(s.to_dict()) == s
