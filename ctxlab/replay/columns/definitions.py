"""The long definitions ``report.md`` prints, one per column that has one (moved here from
``METRIC_DEFINITIONS``, ``COST_DEFINITIONS`` and ``FIDELITY_DEFINITIONS``, which now read the registry)."""

from __future__ import annotations

RAW_TOKENS = (
    "estimate of the uncompressed request of this call: system message (with the unrecorded "
    "prefix, when one is added) + tool schemas + every transcript message before this call"
)
UNRECORDED_PREFIX = (
    "the part of every request the recording does not hold (system prompt, tool schemas, injected "
    "context), added to every strategy's request as one labelled block of the system message, which "
    "no strategy compresses; with --unrecorded-prefix auto (default) the median over the run's calls "
    "before any recorded compaction of recorded input tokens (cache reads and writes included) minus "
    "the replay's estimate of the same request, 0 where no call records its usage; a file that starts "
    "mid-session and records usage after the agent's own compaction: only the fixed part, measured "
    "on the calls after it (the earlier conversation the file lacks is a history message instead, "
    "history_tokens in run.json) (ctxlab.replay.prefix; per run with its source in run.json)"
)
VIEW_TOKENS = (
    "estimate of what the strategy actually sent (system + tools + view messages); "
    "split into view_system_tokens (system + tool schemas), view_user_tokens, view_assistant_tokens, "
    "view_tool_tokens (ToolMessages and observation messages) and view_summary_tokens "
    "(messages marked lc_source=summarization)"
)
SAVING_PCT = "1 - sum(view_tokens) / sum(raw_tokens) over the calls of a run"
LEVEL = (
    "none / L1 / L2, from the context_compression 'completed' event of the call; foreign "
    "middlewares, which emit no such event, count L2 when they rewrote the history with a summary "
    "message (LangChain) or set a new _summarization_event (DeepAgents)"
)
CUTOFF_INDEX = (
    "the L2 cutoff set by this call (global position in the state messages); "
    "state_cutoff_index is the cutoff in effect after the call"
)
OVERHEAD_MS = (
    "wall time inside the middleware (before_model + wrap_model_call) minus the time inside the model handler"
)
CACHE_REUSABLE_TOKENS = (
    "longest common prefix, in tokens, of this call's request (system, tools, "
    "view messages) and the previous call's, comparing messages by canonical content (type, text, "
    "tool calls, tool_call_id): what a provider's prompt cache could reuse; cache-reusable share = "
    "cache_reusable_tokens / view_tokens"
)
RETENTION = (
    "of the identifiers (paths, file names, dotted/snake_case/CamelCase names, error names, "
    "numbers of 4+ digits) that the recorded assistant message mentions and that appeared earlier in "
    "the transcript, the share still present in the view (system and tool schemas excluded); empty "
    "when there are none"
)
UNMATCHED_TOOL_PAIRS = (
    "ToolMessages in the view without an earlier call in the view, plus calls in "
    "the view whose results appear in the transcript before this call but not in the view (must be 0)"
)
SUMMARIZER_USAGE = (
    "summarizer calls and tokens of the L2 round of this call (provider usage when "
    "reported, else estimates); for ctxlab strategies from the completed event's stats, for foreign "
    "middlewares (the baselines) from a LangChain callback handler that sees every chat-model call made "
    "during the call (the replayed main model is never called, so these are the summarizer's): the "
    "provider's usage_metadata when reported, else the measuring estimator's count of the prompt "
    "messages (input) and of the response (output)"
)
COST_USD = (
    "US dollars of the call to the main model under the report's price row, with that provider "
    "family's prompt caching (OpenAI: automatic prefix caching from 1,024 tokens in 128-token steps; "
    "Anthropic: the four breakpoints an agent can place, after the system message and tool schemas, on "
    "the last message and 20 and 40 messages before it (the oracle placement at the end of what the next "
    "call repeats, which no agent can know, is for comparison only: --cache-breakpoints oracle), hits looked up at most 20 blocks "
    "before a breakpoint, the prefix up to the last breakpoint written at the cache-write price and read "
    "at the cached price while it lives 5 minutes, calls assumed within it "
    "since transcripts carry no timestamps; Gemini/DeepSeek: implicit caching, every eligible prefix "
    "counted as a hit): uncached input x input price + cache_read_tokens x cached-input price + "
    "cache_write_tokens x cache-write price + output_tokens x output price; prefixes are matched message "
    "by message (system, tool schemas, then the view) against every earlier request of the run. Per "
    "strategy cost_usd also includes summarizer_cost_usd"
)
SUMMARIZER_COST_USD = (
    "US dollars of the summarizer's calls of this call, priced as uncached calls "
    "(their prompts are not recorded): summarizer_input_tokens x input price + summarizer_output_tokens x "
    "output price"
)
RAW_COST_USD = (
    "US dollars of the uncompressed request of this call (raw_tokens) with the same caching: "
    "the reference a strategy has to beat; cost_saving_pct = 1 - cost_usd / raw_cost_usd over a run's calls"
)
OUTPUT_TOKENS = (
    "the recorded answer's tokens by the measuring estimator (reasoning tokens that the "
    "transcript does not record are not counted). Long-context tiers of a price row price a request whose "
    "input is above their threshold whole at the tier's rates. Not captured by the cost columns: batch "
    "discounts, cache storage fees, the provider's own token counts"
)
SPAN_RECALL = (
    "per L2 round: of the distinct identifiers (paths, file names, dotted/snake_case/CamelCase "
    "names, error names, numbers of 4+ digits) in the summarized span (the messages the round replaced with "
    "its summary, an earlier summary among them), the share present in the summary; empty when the span "
    "has none"
)
NEEDED_RECALL = (
    "identifier recall (the column keeps its name needed_recall): it counts a name as carried when it "
    "appears, so a list of every identifier scores well on it; probe_pass_rate asks that the summary "
    "also state what happened to it. Per L2 round: of the identifiers that later assistant turns use and that, at the time "
    "of use, stood only in the summarized span (not in the system message, the kept window of the view the "
    "round produced, or any later message before the use), the share present in the summary; empty when "
    "there are none. Per strategy: pooled over its rounds (needed_carried / needed_identifiers) and the "
    "mean of the rounds' values. Not captured: paraphrase, facts that are not identifiers, names under 4 "
    "characters, whether the agent would have found the identifier again"
)
DATA_PROVENANCE = (
    "where the transcript comes from: real (a recorded agent run), scripted (a run of a scripted "
    "model, such as the bundled sample recorded by ctxlab.cli.sample) or synthetic (messages made "
    "in code); pooled figures and the executive summary use the real runs unless asked "
    "(ctxlab.replay.sources.data_provenance)"
)
SUMMARY_FAILURES = (
    "summary_error: the summarizer failed or returned no text; summary_fallback: a foreign "
    "middleware committed a canned text instead of a summary (LangChain's and DeepAgents' "
    "'Previous conversation was too long to summarize.'), and still dropped the history; both are "
    "failed summaries (summary_errors counts them, after_failed_summary marks the calls built on "
    "them); summary_declined: a ctxlab round sent a view above T2 without summarizing (the decision hook declined, "
    "or no valid cutoff, R13); summary_rejected: a ctxlab summary was not committed (bigger than "
    "its span); rules in ctxlab.replay.failures"
)
PROBES = (
    "per L2 round, probes drawn from the future of the run: for each thing of the summarized span that a "
    "later turn uses and that neither the system message, the kept window nor the carried latest request "
    "holds, one probe with the attribute a useful summary must state: a file touched again (what was done "
    "to it: changed, deleted, ran or read), a command run again (its last outcome: passed or failed), an "
    "error shown or named again (fixed or open at the end of the span), a user constraint the agent acts "
    "on later (its direction: never or must), a value reused (the name it was given, port of --port 8080). "
    "A summary passes a probe when one of its statements (a line; long lines cut into sentences) names the "
    "subject and states the attribute in its prose words (identifiers are not prose); a statement naming "
    "more than half of a kind's attributes states one only when it is named last. probe_pass_rate = "
    "probes_passed / probes, pooled over the rounds. Rules: ctxlab.replay.probes (no model). Not captured: "
    "paraphrase outside the vocabularies, whether the stated attribute is true of other subjects, uses "
    "that do not name the subject"
)
FLOORS = (
    "the same probes checked on two reference floors built from the same span at the size of the round's "
    "summary (its summarizer text, in its framing): the identifier dump (every identifier of the span, the "
    "most recent first) and keep-recent (the span's last messages verbatim); "
    "dump_probe_pass_rate and recent_probe_pass_rate pool them like probe_pass_rate. A strategy that does "
    "not beat them on its own rounds has no claim to fidelity (ctxlab.core.builtin.floors; the strategies "
    "floor-identifiers and floor-recent replay them)"
)
COST_BREAKDOWN = (
    "where a call's dollars go: cost_usd = cost_read_usd (cache hits) + cost_write_usd (cache writes, at the "
    "write premium) + cost_uncached_usd (input neither read nor written) + cost_output_usd (the answer); "
    "the summarizer's calls are summarizer_cost_usd; raw_cost_read_usd and raw_cost_write_usd split the "
    "uncompressed reference the same way (its output is the same answer). ctxlab.analysis.costs.cost_breakdown "
    "sums them per run"
)
REJECTED_REASON = (
    "a request a provider would refuse, so the call could not have happened as replayed: "
    "unmatched_tool_pairs (a tool result without its call, or a call whose result was dropped: "
    "unmatched_tool_pairs > 0), over_window (the request sent is above the provider's window). Such calls "
    "are counted per strategy (rejected_calls), warned about, and left out of the savings over valid calls "
    "(saving_pct_without_failed, cost_saving_pct_without_failed)"
)
RAW_REJECTED_REASON = (
    "the rule of rejected_reason applied to the uncompressed request (the transcript's messages so far, "
    "counted by the same pairing as unmatched_tool_pairs): a transcript whose own history has a tool "
    "result without its call (a resumed or edited session, another component's pruning) makes a request "
    "a provider refuses whether or not anything is compressed. Such a call's no-compression baseline is "
    "infeasible (infeasible_calls, like over_window): it is left out of the savings over feasible calls, "
    "so a strategy whose request is sendable there (ars turns such a result into text above T) is "
    "neither charged nor credited for it. Per run: raw_rejected_calls"
)
TRIGGER_REACHED = (
    "per call, whether the strategy's own trigger fired, counted the way the strategy counts: a ctxlab "
    "middleware (ars, ars-cache, hybrid, masking, ...) when its estimate of the request (system message "
    "with the unrecorded prefix, tool schemas, messages: R16) reached T and a round started; "
    "langchain-summarization and deepagents-summarization when their own counter reached their trigger "
    "(the same T, counted over the same request); recorded when the agent itself cut the request "
    "(its own compaction or truncation). Per run, reached_threshold: the trigger fired in some call. "
    "A run whose trigger never fired is sent whole by that strategy"
)
OVER_WINDOW = (
    "per call, whether the uncompressed request (raw_tokens' request, counted by the provider "
    "stand-in's counter) is above the provider's context window (the price row's model's by default, "
    "or --context-window). No agent could have sent it: the no-compression baseline of that call is "
    "infeasible, and a saving against it is a saving against an impossible request. Per run: "
    "infeasible_calls and infeasible_share; saving_pct_feasible and cost_saving_pct_feasible are "
    "the savings over the calls whose uncompressed request fits (the headlines use them)"
)
