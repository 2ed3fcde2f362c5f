"""What a model accepts as input (spec R12; issue 30): its window from the model profile, less the
tokens the request reserves for the reply.

Servers count the input and the reply's reserve (``max_tokens``) against one context length, so
the input may use ``max_input_tokens`` less the reserve.  Read from LangChain chat models and a
``ModelRequest``'s ``model_settings``; nothing here raises on a malformed profile or setting (it
counts as unknown).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["RESERVE_KEYS", "input_capacity", "max_input_tokens", "positive_int", "reply_reserve"]


def positive_int(value: Any) -> int | None:
    """``value`` when it is an ``int`` above 0 (not a bool), else ``None``."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def max_input_tokens(model: Any) -> int | None:
    """``model.profile["max_input_tokens"]`` when it is a positive int (tokens), else ``None``.

    A malformed profile (no mapping, a value that is a string, a float, a bool, NaN, negative)
    is treated as unknown and never raises (R12: the capacity is then unknown).
    """
    try:
        profile = getattr(model, "profile", None)
        value = profile.get("max_input_tokens") if isinstance(profile, Mapping) else None
    except Exception:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


#: where a request or a model states the reply's reserve (tokens): LangChain's chat models
#: (``max_tokens``: Anthropic, OpenAI and compatible; ``max_output_tokens``: Google; OpenAI's
#: ``max_completion_tokens``), in ``model_settings`` or on the model (or a ``bind(...)`` of it)
RESERVE_KEYS = ("max_tokens", "max_output_tokens", "max_completion_tokens")


def reply_reserve(model: Any, model_settings: Mapping[str, Any] | None = None) -> int:
    """The tokens a request reserves for the reply (issue 30: the window is input plus reply):
    the first of :data:`RESERVE_KEYS` that is a positive int in ``model_settings`` (a
    ``ModelRequest``'s), else in the keyword arguments of a bound model
    (``model.bind(max_tokens=...)``), else an attribute of the model
    (``ChatAnthropic(max_tokens=...)``, whose default is the model's own output limit); 0 when
    none says.  Never raises."""
    try:
        settings = model_settings if isinstance(model_settings, Mapping) else {}
        sources: list[Any] = [settings]
        for _depth in range(4):  # a model, and the models it binds
            if model is None:
                break
            kwargs = getattr(model, "kwargs", None)
            if isinstance(kwargs, Mapping):
                sources.append(kwargs)
            sources.append({k: getattr(model, k, None) for k in RESERVE_KEYS})
            model = getattr(model, "bound", None)
        for source in sources:
            for key in RESERVE_KEYS:
                found = positive_int(source.get(key))
                if found is not None:
                    return found
    except Exception:
        return 0
    return 0


def input_capacity(model: Any, model_settings: Mapping[str, Any] | None = None) -> tuple[int | None, int]:
    """``(capacity, reserve)``: the input ``model`` accepts (tokens; ``None`` when its profile
    states no window) and the reply's reserve (tokens, 0 when unknown).  The capacity is the
    window less the reserve; a reserve that leaves nothing is ignored (the provider refuses
    every request then, whatever the input)."""
    window = max_input_tokens(model)
    reserve = reply_reserve(model, model_settings)
    if window is not None and 0 < reserve < window:
        return window - reserve, reserve
    return window, reserve
