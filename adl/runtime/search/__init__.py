"""Architecture search: a pair of spaces of programs (ADL texts with choices) searched by
Optuna (``adl search ENC DEC``; docs/search.md).

    from adl.runtime import search
    spec = search.Spec.of("enc.space.adl", "dec.space.adl", train=..., valid=...)
    search.run(spec, "runs/search/s1", trials=20, workers=2)
    print(search.report("runs/search/s1").text)

A search is a folder: ``search.json`` (the spaces' texts and the settings every trial
trains with), the study in an Optuna storage (``study.db``, SQLite, unless a database URL
is given), and a run folder per program trained (``programs/KEY/``, an ordinary run folder
with the program's ``enc.adl`` and ``dec.adl``). Optuna samples the programs (TPE for one
objective, NSGA-II for a Pareto front of two), prunes trials by their validation curve
(successive halving or Hyperband), and shares the study between workers; this room trains
each trial through the runtime's trainer and measures its cost with :mod:`adl.runtime.cost`.
Optuna is an extra: ``pip install adl[search]``.
"""

from adl.runtime.search.spec import SearchError, Spec

__all__ = ["SearchError", "Spec", "confirm", "report", "run"]


def run(*args, **kwargs):
    """:func:`adl.runtime.search.study.run` (imports Optuna)."""
    from adl.runtime.search.study import run as run_search

    return run_search(*args, **kwargs)


def report(*args, **kwargs):
    """:func:`adl.runtime.search.report.report`."""
    from adl.runtime.search.report import report as make_report

    return make_report(*args, **kwargs)


def confirm(*args, **kwargs):
    """:func:`adl.runtime.search.confirm.confirm`."""
    from adl.runtime.search.confirm import confirm as run_confirm

    return run_confirm(*args, **kwargs)
