"""The options of ``ctxlab replay`` and ``ctxlab compare``, one function per group; what they
resolve to (settings, context window, price row, summarizer model, summary cache) is
:mod:`ctxlab.cli.resolve`.

Every option's help names its default.  A user error raises :class:`CliError` (printed as
``ctxlab: error: ...``, exit status 2 unless it says otherwise).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FIGURES",
    "MEASURES",
    "NO_WINDOW",
    "SETTING_FLAGS",
    "CliError",
    "Option",
    "add_common_options",
    "add_input_options",
    "add_measure_options",
    "add_model_options",
    "add_options",
    "add_output_options",
    "add_plugin_options",
    "add_settings_options",
    "file_option",
    "model_option",
    "option",
    "switch",
    "warning_text",
    "window_tokens",
]

#: the numeric settings fields -> (metavar, help) of their ``--summary-*`` flags
_SETTING_HELP = {
    "summary_threshold": ("K", "entry threshold T in K tokens (x1024) (default: 100)"),
    "summary_keep_messages": ("N", "messages kept verbatim by L2 (default: 10)"),
    "summary_tool_result_token_limit": (
        "TOKENS",
        "L1 limit for one tool result, and the preview budget (default: 300)",
    ),
    "summary_l2_trigger_ratio": ("RATIO", "T2 / T (default: 0.4)"),
    "summary_prepare_ratio": (
        "RATIO",
        "prepare the next summary in the background from this share of T, in (0, 1) (default: off)",
    ),
    "summary_prepare_wait_s": ("SECONDS", "how long an L2 round waits for a prepared summary (default: 30)"),
}
#: settings field -> its flag (the field's name in kebab case)
SETTING_FLAGS = {field: "--" + field.replace("_", "-") for field in _SETTING_HELP}
#: the measuring estimators of ``--measure`` (:func:`ctxlab.replay.metrics.make_measure`)
MEASURES = ("char-class", "tiktoken")
#: ``--cache-breakpoints`` (:data:`ctxlab.replay.cost.BREAKPOINTS`, not imported: ``--help`` stays light)
BREAKPOINTS = ("agent", "last", "oracle")
DEFAULT_BREAKPOINTS = "agent"
#: ``--figures`` choices: runs that reach T, every run, none
FIGURES = ("reached", "all", "none")
#: ``--context-window none``: no window at all (the default is the price row's model's)
NO_WINDOW = "none"


def window_tokens(text: str) -> int | str:
    """``--context-window``'s value: tokens, or ``none`` (:data:`NO_WINDOW`: no window at all).

    Raises:
        argparse.ArgumentTypeError: anything else.
    """
    value = text.strip().lower()
    if value in (NO_WINDOW, "off"):
        return NO_WINDOW
    try:
        return int(value.replace(",", "").replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid window {text!r}: allowed an integer > 0, or none"
        ) from None


def warning_text(message: object) -> str:
    """How every command says a warning on stderr: ``ctxlab: warning: <line>`` for each line of
    ``message``, each ending in a newline."""
    return "".join(f"ctxlab: warning: {line}\n" for line in str(message).splitlines() or [""])


class CliError(Exception):
    """A user error: printed as ``ctxlab: error: <message>`` with exit status ``code``."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


# --- option groups ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    """One option of the command line: its flag and the other keyword arguments of argparse's
    ``add_argument`` (``help`` among them)."""

    flag: str
    kwargs: dict[str, Any]


def option(flag: str, help: str, **kwargs: Any) -> Option:
    """An :class:`Option`; ``kwargs`` are ``add_argument``'s (``metavar``, ``type``, ``default``, ...)."""
    return Option(flag, {"help": help, **kwargs})


def file_option(flag: str, help: str) -> Option:
    """An option naming a file (``FILE``)."""
    return option(flag, help, metavar="FILE")


def model_option(flag: str, help: str) -> Option:
    """An option naming a chat model of a LangChain provider (``PROVIDER:MODEL``)."""
    return option(flag, help, metavar="PROVIDER:MODEL")


def switch(flag: str, help: str) -> Option:
    """An on/off flag (``store_true``: off unless given)."""
    return option(flag, help, action="store_true")


def add_options(p: argparse.ArgumentParser, title: str | None, options: Iterable[Option]) -> None:
    """Add ``options`` to ``p``, in a help group titled ``title`` (``None``: no group of their own)."""
    g = p.add_argument_group(title) if title is not None else p
    for o in options:
        g.add_argument(o.flag, **o.kwargs)


def add_settings_options(p: argparse.ArgumentParser) -> None:
    """``--config`` and the ``--summary-*`` flags (the five ARS fields and the later settings; flags override the file)."""
    add_options(
        p,
        "settings (the five ARS fields of the spec, the summary language and prompt, and the prepared-summary ratio and wait; flags override --config)",
        [
            file_option("--config", "TOML or JSON file with the settings fields (default: none)"),
            *(option(SETTING_FLAGS[f], h, metavar=m) for f, (m, h) in _SETTING_HELP.items()),
            file_option(
                "--summary-prompt-file",
                "summarizer prompt, must contain {messages} (default: the built-in prompt)",
            ),
            option(
                "--summary-language",
                "auto, zh or en: the built-in prompt's and the summary's language; auto follows "
                "the user's messages (default: auto)",
                metavar="LANG",
            ),
        ],
    )


def add_input_options(p: argparse.ArgumentParser) -> None:
    """What is replayed, and what a failure does to the batch."""
    add_options(
        p,
        "input",
        [
            option("--format", "transcript format name (default: detected per file)", metavar="NAME"),
            option(
                "--limit-calls",
                "replay at most N model calls per transcript (default: all)",
                metavar="N",
                type=int,
            ),
            switch(
                "--keep-going",
                "batch use: go on after a file that cannot be loaded, a missing path or a failed run, "
                "and report every failure (the exit status is still 1); default: stop at the first "
                "failure",
            ),
        ],
    )


def add_model_options(p: argparse.ArgumentParser) -> None:
    """The main model's provider stand-in (its context window and counter) and the summarizer."""
    add_options(
        p,
        "models",
        [
            option(
                "--context-window",
                "the provider's input window: a request above it is refused with ContextOverflowError, "
                "as a live call would be, and an uncompressed request above it is marked over_window "
                "(infeasible); none: no window (default: the window of the --price-model row's model, "
                "from its LangChain profile, when one is known)",
                metavar="TOKENS|none",
                type=window_tokens,
            ),
            option(
                "--window",
                "the same as --context-window",
                metavar="TOKENS|none",
                type=window_tokens,
                dest="context_window",
            ),
            model_option(
                "--context-window-from",
                "the window of a model profile shipped by the installed LangChain provider package, "
                "e.g. anthropic:claude-sonnet-4-5 (default: none)",
            ),
            option(
                "--provider-count",
                "how the provider stand-in counts a request: tiktoken = cl100k_base, offline; char-class "
                "= ctxlab's estimate (default: %(default)s)",
                choices=("tiktoken", "char-class"),
                default="tiktoken",
            ),
            option(
                "--summarizer-model",
                "summarize with this chat model (init_chat_model), or offline: 'structured' or 'extractive' "
                "(no model call; keeps by salience what later turns use); a chat model also writes the "
                "LangChain and DeepAgents baselines' summaries (default: the offline structured summary)",
                metavar="PROVIDER:MODEL|structured|extractive",
            ),
            option(
                "--summarizer-latency",
                "simulated duration of one summarizer call, for the stall columns: 2s, 500ms, "
                "uniform:1s,3s or lognormal:2s,0.5 (median, sigma); nothing sleeps (default: no latency "
                "model, the stall columns stay empty)",
                metavar="DURATION",
            ),
            option(
                "--call-latency",
                "simulated duration of one agent step (the main model's answer), same forms "
                "(default: 1 s + the recorded answer's output tokens at 50 per second)",
                metavar="DURATION",
            ),
            option(
                "--summary-cache",
                "folder of the on-disk cache of --summarizer-model replies (summaries.sqlite), or off; "
                "a second run of the same command asks the model nothing (default: OUT/.ctxlab-cache)",
                metavar="DIR|off",
            ),
        ],
    )


def add_measure_options(p: argparse.ArgumentParser) -> None:
    """How the token and cost columns are measured."""
    add_options(
        p,
        "measures",
        [
            option(
                "--measure",
                "the measuring estimator for every token column (default: %(default)s)",
                choices=MEASURES,
                default="char-class",
            ),
            file_option(
                "--prices",
                "price table (TOML, the fields of ctxlab/replay/prices.toml) replacing the shipped one "
                "(default: the shipped table)",
            ),
            model_option(
                "--price-model", "the price row of the cost columns (default: anthropic:claude-sonnet-4-5)"
            ),
            option(
                "--cache-breakpoints",
                "where an explicit-caching request (Anthropic) puts its cache breakpoints in the cost "
                "columns: agent = after the system message and tools, on the last message and 20 and 40 "
                "messages before it, as an agent can; last = on the last message only; oracle = where "
                "the next call stops "
                "reusing the prompt, which no agent can know, for comparison (default: %(default)s)",
                choices=BREAKPOINTS,
                default=DEFAULT_BREAKPOINTS,
            ),
            option(
                "--unrecorded-prefix",
                "the part of every request the recording does not hold (system prompt, tool schemas): "
                "auto = measured per run from the recorded provider usage (none where nothing is "
                "recorded), off, or N tokens for every run; added to every strategy's request as one "
                "labelled block (default: %(default)s)",
                metavar="auto|off|N",
                default="auto",
            ),
        ],
    )


def add_output_options(p: argparse.ArgumentParser, command: str) -> None:
    """Where the results go and what is drawn."""
    add_options(
        p,
        "output",
        [
            option(
                "--out",
                "output folder: calls.parquet, summary.csv, report.md, run.json, figures/, files/, "
                "views/ (default: %(default)s)",
                metavar="DIR",
                default=f"out/{command}",
            ),
            option(
                "--figures",
                "budget figures for the runs that reach T, for every run, or none (default: %(default)s)",
                choices=FIGURES,
                default="reached",
            ),
            switch("--no-figures", "the same as --figures none"),
            option(
                "--top",
                "print the N first runs of the per-transcript table, ranked: runs that compressed "
                "first, by raw tokens (default: %(default)s; every run is in summary.csv)",
                metavar="N",
                type=int,
                default=40,
            ),
            option(
                "--data",
                "which runs the executive summary, the per-run statistics and the pooled figures "
                "use: real (recorded agent runs; all runs when none is real) or all (scripted and "
                "synthetic too) (default: %(default)s)",
                choices=("real", "all"),
                default="real",
            ),
            switch(
                "--html",
                "also write inspect.html, the call inspector (the same as `ctxlab show DIR` afterwards)",
            ),
            switch(
                "--no-progress", "no progress bar (default: a bar on a terminal, none when stderr is not one)"
            ),
            switch(
                "--resume",
                "go on with an interrupted run of the same command into the same --out: the runs it "
                "finished (kept in OUT/.ctxlab-staging as they finish) are not replayed again; refused "
                "when the settings, strategies, paths or versions differ (default: start afresh)",
            ),
        ],
    )


def add_plugin_options(p: argparse.ArgumentParser) -> None:
    """A plugins folder (the lab also reads ``$CTXLAB_PLUGINS_DIR``) and ``--strict``."""
    plugins_dir = option(
        "--plugins-dir",
        "also load plugins from the .py files in DIR; hooks that change compression rename the "
        "strategies they apply to (ars+<plugin>), unless the plugin registers strategies of its own "
        "(default: $CTXLAB_PLUGINS_DIR, else none)",
        metavar="DIR",
    )
    strict = switch(
        "--strict",
        "exit 1 when any plugin has a problem (fails to load, is skipped, or a hook raises); without "
        "it the problem is recorded in report.md, run.json and calls.parquet and the run goes on",
    )
    add_options(p, None, [plugins_dir, strict])


def add_parallel_options(p: argparse.ArgumentParser) -> None:
    """Parallel runs: local processes or a Ray cluster (:mod:`ctxlab.replay.parallel`)."""
    add_options(
        p,
        "parallel runs (the same rows as the serial run; ctxlab.replay.parallel)",
        [
            option("--jobs", "local worker processes (default: 1)", metavar="N", type=int, default=1),
            option(
                "--engine",
                "local processes or a Ray cluster, needs ctxlab[ray] (default: local)",
                choices=("local", "ray"),
                default="local",
            ),
            option(
                "--ray-address",
                "the Ray cluster to join (default: $RAY_ADDRESS or a local one)",
                metavar="ADDR",
            ),
        ],
    )


def add_common_options(p: argparse.ArgumentParser, command: str) -> None:
    """Every option group of ``replay`` and ``compare``."""
    add_settings_options(p)
    add_input_options(p)
    add_model_options(p)
    add_measure_options(p)
    add_output_options(p, command)
    add_plugin_options(p)
    add_parallel_options(p)


# --- settings -----------------------------------------------------------------------------------
