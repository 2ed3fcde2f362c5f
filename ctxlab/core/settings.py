"""The "Agent Context" fields of ARS summary compression (spec R1, R2), plus the summary language.

``CompressionSettings`` is frozen and validated at construction: a bad value raises
:class:`SettingsError` (a ``ValueError``) whose message names the field and the allowed range.
A ``summary_l2_trigger_ratio`` outside the recommended 0.1–1.0 emits a ``UserWarning``.

Units: ``summary_threshold`` is in K tokens (×1024); ``summary_tool_result_token_limit`` is in
tokens; ``summary_keep_messages`` counts messages (the summary message is not counted).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ctxlab.core.prompts import SUMMARY_LANGUAGES, SUMMARY_PROMPT_EN, SUMMARY_PROMPT_ZH, template_for

#: R5: the argument limit is an internal constant, not a setting (characters).
ARG_TRUNCATE_CHARS = 2000
#: Metadata flag on every field: only an administrator may change it (R1).
ADMIN_ONLY = "admin_only"

__all__ = [
    "ADMIN_ONLY",
    "ARG_TRUNCATE_CHARS",
    "SUMMARY_PROMPT_EN",
    "SUMMARY_PROMPT_ZH",
    "CompressionSettings",
    "SettingsError",
    "closest_field",
]


class SettingsError(ValueError):
    """An invalid compression setting; ``field`` names it, ``allowed`` states the range."""

    def __init__(self, field_name: str, value: Any, allowed: str) -> None:
        self.field = field_name
        self.value = value
        self.allowed = allowed
        super().__init__(f"{field_name}={value!r} is invalid: allowed {allowed}")


def closest_field(key: str) -> str | None:
    """The :class:`CompressionSettings` field a misspelt ``key`` most likely means, or ``None``.

    Compared without the fields' common start (``summary_``), so that the one close name stands
    out (:func:`difflib.get_close_matches`, cutoff 0.6): ``summary_keep_mesages`` and
    ``keep_mesages`` both give ``summary_keep_messages``."""
    import difflib

    names = [f.name for f in fields(CompressionSettings)]
    prefix = names[0]
    for name in names[1:]:
        while not name.startswith(prefix):
            prefix = prefix[:-1]
    stems = {name.removeprefix(prefix): name for name in names}
    close = difflib.get_close_matches(str(key).removeprefix(prefix), list(stems), n=1, cutoff=0.6)
    return stems[close[0]] if close else None


def _check_known(data: Mapping[str, Any]) -> None:
    """Raise :class:`SettingsError` for the first key of ``data`` (sorted) that is no field of
    :class:`CompressionSettings`: the closest field when one is close (:func:`closest_field`),
    then every field."""
    names = sorted(f.name for f in fields(CompressionSettings))
    for key in sorted(str(k) for k in data if k not in names):
        close = closest_field(key)
        hint = f" (did you mean {close!r}?)" if close else ""
        raise SettingsError(key, data[key], f"a known field{hint}: {names}")


def _meta(doc: str, unit: str) -> dict[str, Any]:
    return {ADMIN_ONLY: True, "doc": doc, "unit": unit}


@dataclass(frozen=True)
class CompressionSettings:
    """ARS compression settings, shared by a main agent and its sub-agents (R1).

    Attributes:
        summary_threshold: entry threshold T in K tokens; T = value × 1024 tokens. Any positive
            finite number (0.5 is allowed).
        summary_keep_messages: messages kept verbatim after an L2 cutoff (≥ 0), besides the
            summary message.
        summary_prompt: summarizer prompt; must contain ``{messages}``. ``None`` (the default):
            the built-in template of the summary language (``SUMMARY_PROMPT_ZH`` or
            ``SUMMARY_PROMPT_EN``). The seed's default is the Chinese template; following the
            conversation's language is a deliberate deviation (``docs/middleware.md``).
        summary_tool_result_token_limit: L1 offloads a ToolMessage whose estimate exceeds this
            many tokens; also the preview budget (> 0).
        summary_l2_trigger_ratio: T2 / T, in (0, ∞) and finite; recommended 0.1–1.0 (warns
            outside).
        summary_language: ``"auto"`` (default), ``"zh"`` or ``"en"``: the language of the
            built-in template and of the summary message's framing.  ``"auto"``: the language of
            the user's messages (Chinese when their letters are mostly CJK, else English) with
            the built-in template, the template's own language with a custom ``summary_prompt``
            (:func:`ctxlab.core.prompts.summary_language_of`).  The last positional field, after the five of
            R1, so that a positional call in the seed's order keeps working (issue 30).
        summary_prepare_ratio: keyword-only.  ``None`` (default): off.  A share of T in (0, 1):
            once a request passes it, the summary the next L2 round would make is prepared in
            the background (:mod:`ctxlab.core.prepare`; a deviation from the seed,
            ``docs/middleware.md``, "Prepared summaries").
        summary_prepare_wait_s: keyword-only.  Seconds an L2 round waits for a summary still
            being prepared before it summarizes as without preparation (finite, ≥ 0; default 30).

    Raises:
        SettingsError: a field is of the wrong type or outside its allowed range.
    """

    summary_threshold: float = field(default=100, metadata=_meta("entry threshold", "K tokens (x1024)"))
    summary_keep_messages: int = field(default=10, metadata=_meta("messages kept by L2", "messages"))
    summary_prompt: str | None = field(
        default=None, metadata=_meta("summarizer prompt (None: built-in template)", "text")
    )
    summary_tool_result_token_limit: int = field(
        default=300, metadata=_meta("L1 tool-result limit and preview budget", "tokens")
    )
    summary_l2_trigger_ratio: float = field(default=0.4, metadata=_meta("T2 / T", "ratio"))
    # the sixth field, after the five of R1 (issue 30): positional calls keep the seed's order
    summary_language: str = field(
        default="auto", metadata=_meta("summary language: auto, zh or en", "language code")
    )
    # keyword-only (issue 34): positional calls of the fields above keep working whatever is added
    summary_prepare_ratio: float | None = field(
        default=None,
        kw_only=True,
        metadata=_meta("share of T at which the next summary is prepared (None: off)", "share of T"),
    )
    summary_prepare_wait_s: float = field(
        default=30.0,
        kw_only=True,
        metadata=_meta("how long an L2 round waits for a prepared summary", "seconds"),
    )

    def __post_init__(self) -> None:
        for name in ("summary_keep_messages", "summary_tool_result_token_limit"):
            value = getattr(self, name)
            if isinstance(value, float) and value.is_integer():
                object.__setattr__(self, name, int(value))
        _check_number("summary_threshold", self.summary_threshold, "a positive finite number (K tokens)")
        if self.summary_threshold <= 0:
            raise SettingsError(
                "summary_threshold", self.summary_threshold, "a positive finite number (K tokens)"
            )
        _check_int("summary_keep_messages", self.summary_keep_messages, "an integer >= 0")
        if self.summary_keep_messages < 0:
            raise SettingsError("summary_keep_messages", self.summary_keep_messages, "an integer >= 0")
        if self.summary_prompt is not None and (
            not isinstance(self.summary_prompt, str) or "{messages}" not in self.summary_prompt
        ):
            raise SettingsError(
                "summary_prompt",
                _short(self.summary_prompt),
                "None (the built-in template) or a string containing the {messages} placeholder",
            )
        if self.summary_language not in SUMMARY_LANGUAGES:
            raise SettingsError(
                "summary_language", self.summary_language, f"one of {list(SUMMARY_LANGUAGES)}"
            )
        _check_int("summary_tool_result_token_limit", self.summary_tool_result_token_limit, "an integer > 0")
        if self.summary_tool_result_token_limit <= 0:
            raise SettingsError(
                "summary_tool_result_token_limit",
                self.summary_tool_result_token_limit,
                "an integer > 0 (tokens)",
            )
        _check_number("summary_l2_trigger_ratio", self.summary_l2_trigger_ratio, "a finite number > 0")
        if self.summary_l2_trigger_ratio <= 0:
            raise SettingsError(
                "summary_l2_trigger_ratio", self.summary_l2_trigger_ratio, "a finite number > 0"
            )
        _check_prepare(self)
        if not 0.1 <= self.summary_l2_trigger_ratio <= 1.0:
            warnings.warn(
                f"summary_l2_trigger_ratio={self.summary_l2_trigger_ratio} is outside the recommended range "
                "0.1-1.0",
                UserWarning,
                stacklevel=3,
            )

    @property
    def entry_threshold_tokens(self) -> float:
        """T in tokens: ``summary_threshold × 1024``, exactly (seed: 乘以 1,024 得到 token 阈值).

        Not floored: ``summary_threshold=0.3`` is T = 307.2 tokens, so an estimate of 307 is
        below T.  An ``int`` when the product is whole (``100`` → ``102400``), else a ``float``.
        The trigger itself: :func:`ctxlab.core.compression.compression_round` compares the
        request estimate with this property directly; an estimate ``≥ T`` starts a round (R3, R4).
        """
        tokens = self.summary_threshold * 1024
        return int(tokens) if float(tokens).is_integer() else float(tokens)

    @property
    def l2_threshold_tokens(self) -> float:
        """T2 in tokens: ``T × summary_l2_trigger_ratio`` (a float).

        The built-in L2 decision (:class:`ctxlab.core.builtin.decision.ArsSummarizeRule`) compares
        the L1 request estimate with it: ``≤ T2`` sends the L1 view (R7), strictly above it L2
        summarizes (R8); the cutoff rule aims below it (R9).
        """
        return self.entry_threshold_tokens * self.summary_l2_trigger_ratio

    def prompt_for(self, language: str) -> str:
        """The summarizer template for a resolved ``language`` (``"zh"`` or ``"en"``): the custom
        ``summary_prompt`` when one is set, else the built-in template of that language."""
        return self.summary_prompt if self.summary_prompt is not None else template_for(language)

    def replace(self, **changes: Any) -> CompressionSettings:
        """A validated copy with some fields changed."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        _check_known(changes)
        data.update(changes)
        return CompressionSettings(**data)

    @classmethod
    def from_mapping(cls, data: dict[str, Any]) -> CompressionSettings:
        """Build from a config mapping; an unknown key raises :class:`SettingsError`, naming the
        closest field when one is close (``summary_keep_mesages``: "did you mean
        'summary_keep_messages'?") and every field."""
        _check_known(data)
        return cls(**data)

    @classmethod
    def admin_only_fields(cls) -> list[str]:
        """Names of the fields whose metadata marks them administrator-only (R1)."""
        return [f.name for f in fields(cls) if f.metadata.get(ADMIN_ONLY)]

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _check_prepare(s: CompressionSettings) -> None:
    """The two preparation fields (issue 34): a ratio strictly between 0 and 1 (or ``None``), a
    finite wait of at least 0 seconds."""
    ratio = s.summary_prepare_ratio
    if ratio is not None:
        _check_number("summary_prepare_ratio", ratio, "None (off) or a number strictly between 0 and 1")
        if not 0 < ratio < 1:
            raise SettingsError(
                "summary_prepare_ratio", ratio, "None (off) or a number strictly between 0 and 1"
            )
    _check_number("summary_prepare_wait_s", s.summary_prepare_wait_s, "a finite number >= 0 (seconds)")
    if s.summary_prepare_wait_s < 0:
        raise SettingsError(
            "summary_prepare_wait_s", s.summary_prepare_wait_s, "a finite number >= 0 (seconds)"
        )


def _short(value: Any) -> Any:
    return value[:40] + "..." if isinstance(value, str) and len(value) > 40 else value


def _check_number(name: str, value: Any, allowed: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SettingsError(name, value, allowed)


def _check_int(name: str, value: Any, allowed: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return
        raise SettingsError(name, value, allowed)
