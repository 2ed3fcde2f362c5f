"""Floor 1, the core: the compression vocabulary and its steps.

Settings and prompts (:mod:`~ctxlab.core.settings`, :mod:`~ctxlab.core.prompts`), message marks
and predicates (:mod:`~ctxlab.core.marks`, :mod:`~ctxlab.core.messages`), token estimation
(:mod:`~ctxlab.core.estimation`), the bounded identity cache every step shares
(:mod:`~ctxlab.core.identity`), files (:mod:`~ctxlab.core.files`), events
(:mod:`~ctxlab.core.events`), L1 (:mod:`~ctxlab.core.l1`), the cutoff and the summary message
(:mod:`~ctxlab.core.cutoff`), summarizing (:mod:`~ctxlab.core.summarize`), the round
(:mod:`~ctxlab.core.compression`), the middleware (:mod:`~ctxlab.core.middleware`), the hook
specifications with their typed façade (:mod:`~ctxlab.core.hookspecs`, :mod:`~ctxlab.core.hooks`),
the plugin manager (:mod:`~ctxlab.core.plugins`) and the built-in ARS plugins
(:mod:`ctxlab.core.builtin`).  Nothing here imports the floors above.
"""
