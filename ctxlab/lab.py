"""Notebook-facing conveniences: where the data is, small tables, figure export, a scripted model.

This module belongs to the lab floor (it imports polars lazily, never at ``import ctxlab``).
The notebooks in ``notebooks/`` call these helpers so that their cells stay short; the real work
(replay, metrics, plots) lives in :mod:`ctxlab.replay`, :mod:`ctxlab.metrics`,
:mod:`ctxlab.report` and :mod:`ctxlab.plotting`.

Paths:

* :func:`repo_root` — the ctxlab checkout (found from the current directory upwards, else from
  the installed package);
* :func:`shared_dir` — the shared data folder beside the checkout (``../shared``, or
  ``$CTXLAB_SHARED``), holding ``transcripts/`` and ``cases/``;
* :func:`figures_dir` / :func:`save_figure` — PNG export when ``$CTXLAB_FIGURES_DIR`` is set.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl
    from langchain_core.messages import BaseMessage

__all__ = [
    "LONG_MINI_SWE_AGENT_RUN",
    "budget_figure",
    "events_frame",
    "figures_dir",
    "files_frame",
    "messages_frame",
    "offloads_frame",
    "plot_sweep",
    "repo_root",
    "rounds_frame",
    "save_figure",
    "scripted_tool_model",
    "shared_dir",
    "summaries_text",
    "sweep",
    "transcript_path",
]

#: the longest real mini-swe-agent run in tokens (SOURCES.md #21: pytest-dev__pytest-6197, 186
#: messages, 92 model calls, its last request ~81k tokens by the default estimator)
LONG_MINI_SWE_AGENT_RUN = (
    "raw/mini-swe-agent/swebench_results/20251118_gemini-3-pro-74pct/trajs/"
    "pytest-dev__pytest-6197/pytest-dev__pytest-6197.traj.json"
)


def _is_repo(path: Path) -> bool:
    return (path / "pyproject.toml").is_file() and (path / "ctxlab" / "__init__.py").is_file()


def repo_root(start: str | os.PathLike[str] | None = None) -> Path:
    """The ctxlab repository root: the first folder from ``start`` (default: the current
    directory) upwards holding ``pyproject.toml`` and ``ctxlab/``; else the folder above the
    imported package (editable installs).

    Raises:
        FileNotFoundError: no checkout was found (ctxlab installed as a wheel, run elsewhere).
    """
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if _is_repo(folder):
            return folder
    import ctxlab

    candidate = Path(ctxlab.__file__).resolve().parents[1]
    if _is_repo(candidate):
        return candidate
    raise FileNotFoundError(f"no ctxlab checkout above {here} (looked for pyproject.toml and ctxlab/)")


def shared_dir(start: str | os.PathLike[str] | None = None) -> Path:
    """The shared data folder: ``$CTXLAB_SHARED`` if set, else ``<repo root>/../shared``.

    Raises:
        FileNotFoundError: the folder or its ``transcripts/`` subfolder is missing.
    """
    env = os.environ.get("CTXLAB_SHARED")
    folder = Path(env).resolve() if env else (repo_root(start).parent / "shared").resolve()
    if not (folder / "transcripts").is_dir():
        raise FileNotFoundError(
            f"shared data not found at {folder}: ctxlab's notebooks expect the shared folder beside "
            "the repository (../shared with transcripts/), or $CTXLAB_SHARED"
        )
    return folder


def transcript_path(relative: str, start: str | os.PathLike[str] | None = None) -> Path:
    """A file of the shared transcript set, ``relative`` to ``<shared>/transcripts``.

    Raises:
        FileNotFoundError: the file does not exist.
    """
    path = shared_dir(start) / "transcripts" / relative
    if not path.is_file():
        raise FileNotFoundError(f"transcript not found: {path}")
    return path


# --- figures -----------------------------------------------------------------------------------


def figures_dir() -> Path | None:
    """``$CTXLAB_FIGURES_DIR`` as a path (created), or ``None`` when figure export is off.

    A relative value is relative to the repository root (so ``docs/figures`` works from a
    notebook, whose working directory is ``notebooks/``).
    """
    env = os.environ.get("CTXLAB_FIGURES_DIR")
    if not env:
        return None
    folder = Path(env)
    if not folder.is_absolute():
        folder = repo_root() / folder
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def save_figure(fig: Any, name: str, *, dpi: int = 110) -> Path | None:
    """Save ``fig`` as ``<$CTXLAB_FIGURES_DIR>/<name>.png`` when export is on; else do nothing.

    Returns:
        The PNG path, or ``None`` when ``$CTXLAB_FIGURES_DIR`` is not set.
    """
    folder = figures_dir()
    if folder is None:
        return None
    path = folder / f"{name}.png"
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    return path


# --- small tables ------------------------------------------------------------------------------


def _preview(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def messages_frame(messages: Sequence[BaseMessage], *, preview: int = 70) -> pl.DataFrame:
    """One row per message: position, type, estimated tokens (ARS default estimator), preview.

    Columns: ``i`` (position), ``type`` (``human``/``ai``/``tool``/``system``; ``summary`` for
    an L2 summary message), ``tool_calls`` (count), ``tokens`` (estimate), ``text`` (preview).
    """
    import polars as pl

    from ctxlab.estimation import CharClassEstimator
    from ctxlab.messages import message_text

    est = CharClassEstimator()
    rows = []
    for i, m in enumerate(messages):
        kind = "summary" if m.additional_kwargs.get("lc_source") == "summarization" else m.type
        rows.append(
            {
                "i": i,
                "type": kind,
                "tool_calls": len(getattr(m, "tool_calls", None) or []),
                "tokens": est.message_tokens(m),
                "text": _preview(message_text(m), preview),
            }
        )
    schema = {"i": pl.Int64, "type": pl.Utf8, "tool_calls": pl.Int64, "tokens": pl.Int64, "text": pl.Utf8}
    return pl.DataFrame(rows, schema=schema)


def events_frame(events: Iterable[dict[str, Any]]) -> pl.DataFrame:
    """``context_compression`` events (spec R14) as a table, one row per event, in order.

    Columns: ``phase``, ``level``, ``tokens_before``, ``tokens_after``, ``threshold`` (T),
    ``l2_threshold`` (T2), ``offloaded`` (count), ``cutoff_index``, ``file_path``, ``error``.
    """
    import polars as pl

    rows = []
    for e in events:
        stats = e.get("stats") or {}
        rows.append(
            {
                "phase": e.get("phase"),
                "level": e.get("level"),
                "tokens_before": e.get("tokens_before"),
                "tokens_after": e.get("tokens_after"),
                "threshold": e.get("threshold"),
                "l2_threshold": None if e.get("l2_threshold") is None else float(e["l2_threshold"]),
                "offloaded": len(stats.get("offloaded") or []),
                "cutoff_index": e.get("cutoff_index"),
                "file_path": e.get("file_path"),
                "error": e.get("error"),
            }
        )
    schema = {
        "phase": pl.Utf8,
        "level": pl.Utf8,
        "tokens_before": pl.Int64,
        "tokens_after": pl.Int64,
        "threshold": pl.Int64,
        "l2_threshold": pl.Float64,
        "offloaded": pl.Int64,
        "cutoff_index": pl.Int64,
        "file_path": pl.Utf8,
        "error": pl.Utf8,
    }
    return pl.DataFrame(rows, schema=schema)


def files_frame(root: str | os.PathLike[str]) -> pl.DataFrame:
    """Every file under ``root`` (a file backend's root folder): virtual path and size in bytes.

    Paths are shown as the model sees them (``/outputs/...``), sorted.
    """
    import polars as pl

    base = Path(root)
    rows = [
        {"path": "/" + p.relative_to(base).as_posix(), "bytes": p.stat().st_size}
        for p in sorted(base.rglob("*"))
        if p.is_file()
    ]
    return pl.DataFrame(rows, schema={"path": pl.Utf8, "bytes": pl.Int64})


# --- replay views ------------------------------------------------------------------------------


def budget_figure(
    calls: pl.DataFrame,
    transcript: str | None = None,
    strategy: str | None = None,
    *,
    fig: Any = None,
    title: str | None = None,
) -> Any:
    """The token budget of one run in two panels sharing the x axis (model calls).

    Top: the request view split by part, stacked (:func:`ctxlab.plotting.plot_view_parts`).
    Bottom: raw vs sent tokens, T and T2, and markers on the calls where L1 and L2 ran
    (:func:`ctxlab.plotting.plot_budget`).

    Args:
        calls: the per-call frame of a replay (``ReplayResult.frame()``).
        transcript, strategy: which run (default: the first in ``calls``).
        fig: redraw into this figure (its two axes are cleared) instead of making a new one;
            used by :mod:`ctxlab.widgets` to update one figure in place.
        title: a figure title (default: ``"<transcript> [<strategy>]"``).

    Returns:
        The figure (a ``matplotlib.figure.Figure`` not registered with pyplot when new).
    """
    from matplotlib.figure import Figure

    from ctxlab.plotting import plot_budget, plot_view_parts

    if fig is None:
        fig = Figure(figsize=(10, 7.6), dpi=100, layout="constrained")
    if len(fig.axes) == 2:
        top, bottom = fig.axes
        top.clear()
        bottom.clear()
    else:
        fig.clear()
        top, bottom = fig.subplots(2, 1, sharex=True)
    if transcript is None and calls.height:
        transcript = calls["transcript"][0]
    if strategy is None and calls.height:
        strategy = calls.filter(calls["transcript"] == transcript)["strategy"][0]
    plot_view_parts(
        calls, transcript, strategy, ax=top, title="request view by part (stacked)", show_raw=True
    )
    plot_budget(calls, transcript, strategy, ax=bottom, title="raw vs sent, thresholds, compression rounds")
    top.set_xlabel("")
    top.tick_params(labelbottom=False)
    fig.suptitle(title or f"{transcript}  [{strategy}]", fontsize=12)
    return fig


def rounds_frame(calls: pl.DataFrame) -> pl.DataFrame:
    """The calls where a compression round ran (``level`` L1 or L2), with what it did.

    Columns: ``transcript``, ``strategy``, ``call_index``, ``level``, ``raw_tokens``,
    ``view_tokens``, ``saved_pct`` (of this call's raw request), ``offloaded``,
    ``truncated_args``, ``cutoff_index``, ``summarizer_input_tokens``,
    ``summarizer_output_tokens``.
    """
    import polars as pl

    return calls.filter(pl.col("level").is_in(["L1", "L2"])).select(
        "transcript",
        "strategy",
        "call_index",
        "level",
        "raw_tokens",
        "view_tokens",
        (100.0 * (1 - pl.col("view_tokens") / pl.col("raw_tokens"))).round(1).alias("saved_pct"),
        "offloaded",
        "truncated_args",
        "cutoff_index",
        "summarizer_input_tokens",
        "summarizer_output_tokens",
    )


def offloads_frame(result: Any) -> pl.DataFrame:
    """What L1 offloaded in a replay: one row per file, in the order first offloaded.

    Columns: ``transcript``, ``strategy``, ``path`` (virtual, as the model sees it), ``bytes``
    (size of the saved file), ``first_call`` (the call that first offloaded it), ``calls``
    (how many calls sent its preview instead of the full text).
    """
    import polars as pl

    schema = {
        "transcript": pl.Utf8,
        "strategy": pl.Utf8,
        "path": pl.Utf8,
        "bytes": pl.Int64,
        "call_index": pl.Int64,
    }
    rows = [{k: o.get(k) for k in schema} for o in result.offloads]
    df = pl.DataFrame(rows, schema=schema)
    return (
        df.group_by("transcript", "strategy", "path", maintain_order=True)
        .agg(
            pl.col("bytes").first(),
            pl.col("call_index").min().alias("first_call"),
            pl.len().cast(pl.Int64).alias("calls"),
        )
        .sort("transcript", "strategy", "first_call", maintain_order=True)
    )


def summaries_text(result: Any, *, max_chars: int | None = 2500) -> str:
    """The summary of every L2 round of a replay, as readable text (one block per round).

    Each block names the transcript, the call, the cutoff and the summary's size in tokens;
    texts longer than ``max_chars`` are cut (``None``: never), the full text stays in
    ``result.summaries``.
    """
    blocks = []
    for s in result.summaries:
        text = s.get("text") or ""
        if max_chars is not None and len(text) > max_chars:
            text = text[:max_chars] + f"\n[... {len(text) - max_chars:,} more characters]"
        head = (
            f"=== {s.get('transcript')} [{s.get('strategy')}] call {s.get('call_index')}: "
            f"cutoff_index={s.get('cutoff_index')}, {s.get('tokens')} tokens"
        )
        if s.get("error"):
            head += f", summarizer error: {s['error']}"
        blocks.append(head + " ===\n" + text)
    return "\n\n".join(blocks) if blocks else "(no L2 round: no summary)"


# --- a sweep over one setting ------------------------------------------------------------------


def sweep(
    transcripts: Sequence[Any],
    setting: str,
    values: Iterable[Any],
    *,
    strategy: str = "ars",
    settings: Any = None,
    pm: Any = None,
    out_dir: str | os.PathLike[str] | None = None,
) -> pl.DataFrame:
    """Replay ``transcripts`` with ``strategy`` once per value of one setting; one row per value.

    Args:
        transcripts: loaded transcripts (or files) for :func:`ctxlab.replay.replay_many`.
        setting: a :class:`ctxlab.CompressionSettings` field, e.g. ``"summary_l2_trigger_ratio"``.
        values: the values to try, in order.
        strategy: the strategy name.
        settings: the other fields (default: the ARS defaults).
        pm: the plugin manager strategies are looked up in.
        out_dir: root of the files the replays write (a temporary folder when ``None``).

    Returns:
        Columns: ``value``, ``T`` and ``T2`` (tokens), ``calls``, ``raw_tokens_total``,
        ``sent_tokens_total``, ``saving_pct`` (over all calls of all transcripts), ``l1_rounds``,
        ``l2_rounds``, ``summarizer_input_tokens``, ``summarizer_output_tokens``,
        ``mean_retention``, ``mean_cache_reusable_share``, ``errors`` (failed runs).

    Raises:
        SettingsError: a value is invalid for the setting.
    """
    import warnings

    import polars as pl

    from ctxlab.replay import replay_many
    from ctxlab.report import strategy_totals
    from ctxlab.settings import CompressionSettings

    base = settings or CompressionSettings()
    rows = []
    for value in values:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # outside the recommended range: intended
            current = base.replace(**{setting: value})
        result = replay_many(
            list(transcripts), [strategy], settings=current, pm=pm, out_dir=out_dir, progress=False
        )
        totals = strategy_totals(result.frame())
        row = totals.row(0, named=True) if totals.height else {}
        rows.append(
            {
                "value": float(value),
                "T": current.entry_threshold_tokens,
                "T2": float(current.l2_threshold_tokens),
                **{
                    k: row.get(k)
                    for k in (
                        "calls",
                        "raw_tokens_total",
                        "sent_tokens_total",
                        "saving_pct",
                        "l1_rounds",
                        "l2_rounds",
                        "summarizer_input_tokens",
                        "summarizer_output_tokens",
                        "mean_retention",
                        "mean_cache_reusable_share",
                    )
                },
                "errors": len(result.errors),
            }
        )
    return pl.DataFrame(rows).with_columns(pl.col("calls").cast(pl.Int64))


def plot_sweep(
    frame: pl.DataFrame,
    *,
    setting: str = "summary_l2_trigger_ratio",
    ax: Any = None,
    title: str | None = None,
) -> Any:
    """The curve of a :func:`sweep`: saving % (left axis, line) and L2 rounds (right axis,
    bars) against the setting's value.

    Args:
        frame: the sweep's frame.
        setting: the swept field (the x label).
        ax: draw here instead of a new figure.
        title: the axes title.

    Returns:
        The figure.
    """
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    if ax is None:
        fig = Figure(figsize=(9, 4.8), dpi=100, layout="constrained")
        ax = fig.add_subplot()
    fig = ax.figure
    x = frame["value"].to_list()
    width = 0.6 * (min(b - a for a, b in itertools.pairwise(x)) if len(x) > 1 else 0.1)
    right = ax.twinx()
    bars = right.bar(
        x, frame["l2_rounds"].to_list(), width=width, color="#d62728", alpha=0.3, label="L2 rounds"
    )
    right.set_ylabel("L2 rounds (all transcripts)")
    right.yaxis.set_major_locator(MaxNLocator(integer=True))
    (line,) = ax.plot(
        x, frame["saving_pct"].to_list(), marker="o", color="#1f77b4", linewidth=2, label="saving %"
    )
    ax.set_zorder(right.get_zorder() + 1)
    ax.patch.set_visible(False)
    ax.set_xlabel(f"{setting}" + (" (T2 / T)" if setting == "summary_l2_trigger_ratio" else ""))
    ax.set_ylabel("tokens saved (% of raw)")
    ax.set_ylim(0, max(100.0, *(v or 0 for v in frame["saving_pct"].to_list())))
    ax.set_xticks(x, [f"{v:g}" for v in x])
    ax.grid(True, alpha=0.3, linewidth=0.6)
    ax.legend([line, bars], ["saving %", "L2 rounds"], loc="upper right", framealpha=0.85)
    ax.set_title(title or f"sweep over {setting}", fontsize=11)
    return fig


# --- a scripted tool-calling model -------------------------------------------------------------


def scripted_tool_model(
    turns: Sequence[Sequence[tuple[str, dict[str, Any]]]],
    *,
    final: str = "Done.",
    say: str = "",
) -> Any:
    """A fake chat model for agent prototypes: each call returns the next scripted turn.

    Args:
        turns: one entry per model call; each a list of ``(tool name, args)`` calls made in that
            turn (several calls in one turn are parallel tool calls).
        final: the text of the last turn (no tool calls), which ends the agent loop.
        say: text the model says with each tool-calling turn (``{i}`` is the turn number).

    Returns:
        A :class:`ctxlab.sample.ScriptedChatModel` (a ``BaseChatModel`` whose ``bind_tools``
        returns itself); tool-call ids are ``call_001``, ``call_002``, ...
    """
    from langchain_core.messages import AIMessage

    from ctxlab.sample import ScriptedChatModel

    def plan():
        n = 0
        for i, calls in enumerate(turns, 1):
            tool_calls = []
            for name, args in calls:
                n += 1
                tool_calls.append(
                    {"name": name, "args": dict(args), "id": f"call_{n:03d}", "type": "tool_call"}
                )
            yield AIMessage(content=say.format(i=i), tool_calls=tool_calls)
        yield AIMessage(content=final)

    return ScriptedChatModel(plan=plan())
