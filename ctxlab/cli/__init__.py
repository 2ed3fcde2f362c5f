"""Floor 5, the command line: ``ctxlab replay|compare|plugins|bench``, the benchmarks
(:mod:`ctxlab.cli.bench`) and the sample recorder (:mod:`ctxlab.cli.sample`)."""
