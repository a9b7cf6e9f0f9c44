"""Reading a spec's seeds: ``seeds:`` (every system's), ``seed_budget:`` (the most seeds a
comparison may get) and ``headline:`` (the rows whose comparison always gets the budget);
seeding.py decides which seeds each system trains."""

from __future__ import annotations

from adl.errors import did_you_mean
from adl.runtime.sweep.located import Map, Seq, Values, show
from adl.runtime.sweep.spec import Spec


class SeedKeys(Values):
    """The spec reader's seed keys (reader.py's reader is one)."""

    def seeds(self, doc: Map, spec: Spec) -> None:
        if "seeds" not in doc:
            return
        value, mark = doc["seeds"], doc.value_mark("seeds")
        if isinstance(value, int) and not isinstance(value, bool):
            n = self.integer(value, mark, "seeds")
            if n:
                spec.seeds = list(range(1, n + 1))
            return
        if not isinstance(value, Seq) or not value:
            self.add(mark, f"seeds takes a list of integers or a count, not {show(value)}")
            return
        seeds = []
        for i, s in enumerate(value):
            n = self.integer(s, value.item_mark(i), "a seed", 0)
            if n is None:
                continue
            if n in seeds:
                self.add(value.item_mark(i), f"seed {n} is given twice")
                continue
            seeds.append(n)
        spec.seeds = seeds

    def more_seeds(self, doc: Map, spec: Spec) -> None:
        """``seed_budget: N`` (the most seeds a comparison may get) and ``headline: NAME`` or
        ``[NAMES]`` (rows whose comparison gets the budget whatever its verdict)."""
        if "seed_budget" in doc:
            n = self.integer(doc["seed_budget"], doc.value_mark("seed_budget"), "seed_budget", 1)
            if n is not None and n < len(spec.seeds):
                self.add(
                    doc.value_mark("seed_budget"),
                    f"seed_budget {n} is below the {len(spec.seeds)} seeds every system has",
                )
            spec.seed_budget = n or 0
        if "headline" not in doc:
            return
        value, mark = doc["headline"], doc.value_mark("headline")
        items = list(value) if isinstance(value, Seq) else [value]
        names = [s.name for s in spec.systems]
        for i, item in enumerate(items):
            where = value.item_mark(i) if isinstance(value, Seq) else mark
            name = self.text(item, where, "headline")
            if name is None:
                continue
            if name not in names:
                self.add(
                    where,
                    f"headline '{name}' is not one of the systems",
                    did_you_mean(name, names, ignore_case=True),
                )
            elif name == spec.baseline:
                self.add(
                    where, f"headline '{name}' is the baseline: name the system compared with it"
                )
            else:
                spec.headline.append(name)
        if spec.headline and spec.seed_budget <= len(spec.seeds):
            self.add(mark, "headline: gets seed_budget seeds: give seed_budget: N above the seeds")
