"""Floor 5, the command line: the commands users run, ``ctxlab replay|compare|findings|plugins|bench``
(the benchmarks: :mod:`ctxlab.cli.bench`).  Developer tooling (the sample recorder, the profiler,
the estimator's calibration) lives in the repository's ``tools/``, outside the package."""
