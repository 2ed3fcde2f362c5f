"""The built-in ARS estimator plugin (R16): character-class ratios."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from ctxlab.core.estimation import CharClassEstimator
from ctxlab.core.hookspecs import hookimpl


class DefaultEstimator:
    """Registers :class:`ctxlab.core.estimation.CharClassEstimator` for both estimation hooks."""

    name = "char-class-estimator"

    def __init__(self) -> None:
        self._impl = CharClassEstimator()

    @hookimpl(trylast=True)
    def ctxlab_estimate_message(self, message: BaseMessage) -> int:
        return self._impl.message_tokens(message)

    @hookimpl(trylast=True)
    def ctxlab_estimate_tools(self, tools: Sequence[Any]) -> int:
        return self._impl.tools_tokens(tools)
