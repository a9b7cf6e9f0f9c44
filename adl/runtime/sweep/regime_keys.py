"""Reading a spec's ``regime:`` (regime.py has what it means): the sizes of the training set,
the peak rates searched and where, the settings scaled with the updates."""

from __future__ import annotations

from adl.runtime import config as cfgmod
from adl.runtime.sweep.located import Map, Seq, Values, show
from adl.runtime.sweep.spec import REGIME_KEYS, RegimeSpec, Spec

ALL = "all"  # a size: the whole training set


class RegimeKeys(Values):
    """The spec reader's ``regime:`` key (reader.py's reader is one)."""

    def regime(self, doc: Map, spec: Spec) -> None:
        m = self.section(doc, "regime", REGIME_KEYS)
        if m is None:
            return
        where = doc.key_mark("regime")
        sizes = self.sizes(m)
        found = RegimeSpec(sizes or [], mark=where)  # the other keys are checked all the same
        if "rates" in m:
            value, mark = m["rates"], m.value_mark("rates")
            items = list(value) if isinstance(value, Seq) else []
            if not items:
                self.add(mark, f"regime: rates takes a list of peak rates, not {show(value)}")
            for i, item in enumerate(items):
                rate = self.number(item, value.item_mark(i), "regime: a rate")
                if rate is not None and rate <= 0:
                    self.add(value.item_mark(i), f"regime: a rate must be above 0, not {rate:g}")
                elif rate is not None:
                    found.rates.append(float(rate))
            if "rate_size" not in m:
                self.add(mark, "regime: rates needs rate_size: the size they are searched at")
        if "rate_size" in m:
            size = self.size(m["rate_size"], m.value_mark("rate_size"), "regime: rate_size")
            if size is not None or m["rate_size"] == ALL:
                if sizes is not None and size not in sizes:
                    self.add(
                        m.value_mark("rate_size"), "regime: rate_size must be one of the sizes"
                    )
                found.rate_size = size
        if "scale" in m:
            value, mark = m["scale"], m.value_mark("scale")
            items = list(value) if isinstance(value, Seq) else [value]
            for i, item in enumerate(items):
                at = value.item_mark(i) if isinstance(value, Seq) else mark
                if str(item) not in cfgmod.keys():
                    self.add(at, f"regime: scale: unknown setting {show(item)}")
                else:
                    found.scale.append(str(item))
        if "sample_seed" in m:
            n = self.integer(
                m["sample_seed"], m.value_mark("sample_seed"), "regime: sample_seed", 0
            )
            found.sample_seed = n if n is not None else 1
        if spec.minutes:
            self.add(where, "regime: the budget is in updates (steps:), scaled with the sizes")
        if sizes is not None:
            spec.regime = found

    def sizes(self, m: Map) -> list[int | None] | None:
        if "sizes" not in m:
            self.add(m.mark, "regime needs sizes: the training pairs of each subsample (or all)")
            return None
        value, mark = m["sizes"], m.value_mark("sizes")
        if not isinstance(value, Seq) or len(value) < 2:
            self.add(mark, f"regime: sizes takes a list of two sizes or more, not {show(value)}")
            return None
        sizes: list[int | None] = []
        for i, item in enumerate(value):
            size = self.size(item, value.item_mark(i), "regime: a size")
            if size is None and item != ALL:
                return None
            sizes.append(size)
        numbers = [s for s in sizes if s is not None]
        if numbers != sorted(set(numbers)) or (None in sizes and sizes[-1] is not None):
            self.add(mark, "regime: sizes must grow from the smallest to the largest (all last)")
            return None
        return sizes

    def size(self, value, mark, what: str) -> int | None:
        """A number of training pairs, or None for ``all``."""
        if value == ALL:
            return None
        return self.integer(value, mark, what, 1)
