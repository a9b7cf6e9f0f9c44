"""Reading a sweep's spec (:func:`read_spec`): the located YAML of the file checked key by
key into a :class:`~adl.runtime.sweep.spec.Spec`, with every problem at its line and column
(docs/experiments.md, "Errors")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from adl.errors import did_you_mean
from adl.runtime import config as cfgmod
from adl.runtime.errors import UserError
from adl.runtime.sweep.located import Map, Mark, Problem, Seq, load
from adl.runtime.sweep.paper_keys import PaperKeys
from adl.runtime.sweep.references import reference_problems
from adl.runtime.sweep.regime_keys import RegimeKeys
from adl.runtime.sweep.seed_keys import SeedKeys
from adl.runtime.sweep.spec import (
    BUDGET_KEYS,
    CHECKPOINTS,
    DATA_KEYS,
    NAME,
    OWNED,
    SIGNIFICANCE_KEYS,
    SYSTEM_KEYS,
    TESTS,
    TOP_KEYS,
    Spec,
    SpecError,
    SystemSpec,
    decode_keys,
    resolve,
)
from adl.runtime.sweep.verdicts import CLAIMS

# what a spec must have: the key, and the problem when it is not there
MISSING = {
    "budget": "no budget: say how long each run trains (budget: {steps: N} or {minutes: M})",
    "systems": "no systems: list them under systems:",
    "baseline": "no baseline: name the system the others are compared with (baseline: NAME)",
}


# --- reading ---------------------------------------------------------------------------------
class _Reader(SeedKeys, RegimeKeys, PaperKeys):
    """Builds a :class:`Spec` from the located YAML, collecting every problem."""

    def __init__(self, path: Path):
        super().__init__(path)
        self.base = path.resolve().parent
        self.refs: dict[tuple[str, str], Mark] = {}  # (system, against/decode_of) -> where

    # sections -------------------------------------------------------------------------------
    def read(self, doc: Any) -> Spec:
        spec = Spec(self.path, name=self.path.stem)
        top = Mark(str(self.path), 1, 1)
        if not isinstance(doc, Map):
            self.add(top, "a spec holds key: value lines (name:, preset:, systems:, ...)")
            return spec
        self.keys(doc, TOP_KEYS, "the spec")
        spec.marks = {k: doc.key_mark(k) for k in doc}
        at = doc.value_mark
        if "name" in doc:
            name = self.text(doc["name"], at("name"), "name")
            if name is not None and not NAME.match(name):
                self.add(at("name"), f"name {name!r} must be a folder name (letters, digits, ._+-)")
            elif name is not None:
                spec.name = name
        if "description" in doc:
            spec.description = self.text(doc["description"], at("description"), "description") or ""
        if "preset" in doc:
            preset = self.text(doc["preset"], at("preset"), "preset")
            if preset is not None:
                self.preset(preset, at("preset"), spec)
            else:
                spec.preset_ok = False
        self.data(doc, spec)
        self.budget(doc, spec)
        if "settings" in doc:
            spec.settings = self.settings(doc["settings"], at("settings"), "settings")
        if "vars" in doc:
            spec.vars = self.variables(doc["vars"], at("vars"), "vars")
        self.seeds(doc, spec)
        if "decode" in doc:
            spec.decode = {**spec.decode, **self.decode(doc["decode"], at("decode"), "decode")}
        if "checkpoint" in doc:
            spec.checkpoint = (
                self.choice(doc["checkpoint"], at("checkpoint"), "checkpoint", CHECKPOINTS)
                or spec.checkpoint
            )
        self.significance(doc, spec)
        if "slurm" in doc:
            m = self.mapping(doc["slurm"], at("slurm"), "slurm")
            spec.slurm = dict(m or {})
        self.systems(doc, spec)
        self.baseline(doc, spec)
        self.more_seeds(doc, spec)
        self.regime(doc, spec)
        self.paper_scale(doc, spec)
        self.problems.extend(reference_problems(spec.systems, self.refs, spec.baseline))
        return spec

    def preset(self, text: str, mark: Mark, spec: Spec) -> None:
        """A bundled preset's name, or a YAML file (read from the spec's folder)."""
        if Path(text).suffix in (".yaml", ".yml"):
            path = resolve(text, self.base)[0]
            if not path.is_file():
                self.add(mark, f"preset: no such file {path}")
                spec.preset_ok = False
                return
            spec.preset = str(path)
            return
        try:
            cfgmod.preset_path(text)
        except UserError as exc:
            self.add(mark, str(exc))
            spec.preset_ok = False
            return
        spec.preset = text

    def data(self, doc: Map, spec: Spec) -> None:
        m = self.mapping(doc.get("data"), doc.value_mark("data"), "data")
        if m is None:
            return
        self.keys(m, DATA_KEYS, "data")
        d = spec.data
        for key in ("pair", "dir", "wheel", "cache", "train", "valid", "test"):
            if key in m and m[key] is not None:
                value = self.text(m[key], m.value_mark(key), f"data: {key}")
                if value is not None:
                    setattr(d, key, value)
        if "max_words" in m:
            d.max_words = (
                None
                if m["max_words"] is None
                else self.integer(m["max_words"], m.value_mark("max_words"), "data: max_words")
            )
        if "test_max" in m:
            d.test_max = (
                self.integer(m["test_max"], m.value_mark("test_max"), "data: test_max", 0) or 0
            )
        own = [k for k in ("train", "valid", "test", "langs") if k in m]
        if own:
            if "langs" in m:
                langs = m["langs"]
                if not (isinstance(langs, list) and len(langs) == 2):
                    self.add(m.value_mark("langs"), "data: langs takes [SRC, TGT], e.g. [en, de]")
                else:
                    d.langs = [str(x) for x in langs]
            for key in ("train", "test", "langs"):
                if key not in m:
                    self.add(
                        m.mark,
                        f"data: your own data needs {key}: ("
                        + ("[SRC, TGT]" if key == "langs" else "a PREFIX")
                        + ")",
                    )
            bible = [k for k in ("pair", "max_words", "dir", "wheel") if k in m]
            for key in bible:
                self.add(m.key_mark(key), f"data: {key} is for the Bible corpus, not your own data")
            if d.langs and d.train:
                for key in ("train", "valid", "test"):
                    prefix = getattr(d, key)
                    if prefix is None:
                        continue
                    path = resolve(prefix, self.base)[0]
                    setattr(d, key, str(path))
                    missing = [f"{path}.{x}" for x in d.langs if not Path(f"{path}.{x}").is_file()]
                    if missing:
                        self.add(
                            m.value_mark(key), f"data: {key}: no such file {' or '.join(missing)}"
                        )
        else:
            for key in ("dir", "wheel", "cache"):
                if key in m and getattr(d, key):
                    setattr(d, key, str(resolve(getattr(d, key), self.base)[0]))
            if "pair" in m:
                from adl.runtime.data.bible import CorpusError, parse_pair

                try:
                    parse_pair(d.pair)
                except CorpusError as exc:
                    self.add(m.value_mark("pair"), str(exc).replace("--pair", "data: pair"))
            if d.wheel and not Path(d.wheel).is_file():
                self.add(m.value_mark("wheel"), f"data: wheel: no such file {d.wheel}")

    def budget(self, doc: Map, spec: Spec) -> None:
        found = self.required(doc, "budget", MISSING["budget"])
        m = self.mapping(*found, "budget") if found else None
        if m is None:
            return
        self.keys(m, BUDGET_KEYS, "budget")
        if "steps" in m:
            spec.steps = self.integer(m["steps"], m.value_mark("steps"), "budget: steps") or 0
        if "minutes" in m:
            spec.minutes = (
                self.number(m["minutes"], m.value_mark("minutes"), "budget: minutes") or 0
            )
        if not m:
            self.add(m.mark, "budget takes steps: N, minutes: M, or both")

    def settings(self, value: Any, mark: Mark, what: str) -> list[tuple[str, Any, Mark]]:
        """``key: value`` lines (``optim.lr: 1e-3``, a bare unambiguous ``lr:``, or nested
        sections ``optim: {lr: 1e-3}``), each checked against the run configuration."""
        m = self.mapping(value, mark, what)
        if m is None:
            return []
        flat: list[tuple[str, Any, Mark]] = []
        for key, v in m.items():
            if key in cfgmod.SECTIONS and isinstance(v, Map):
                flat += [(f"{key}.{k}", v[k], v.key_mark(k)) for k in v]
            else:
                flat.append((str(key), v, m.key_mark(key)))
        out = []
        scratch = cfgmod.Config()
        for key, v, where in flat:
            name = canonical_key(key) or ""
            if name in OWNED or name.startswith("model.vars."):
                if name.startswith("model.vars."):
                    self.add(where, f"{what}: set ${name.split('.')[-1]} under vars:")
                else:
                    self.add(where, f"{what}: {name} is set by the spec's {OWNED[name]}")
                continue
            try:
                cfgmod.set_value(scratch, key, v)
            except UserError as exc:
                self.add(where, f"{what}: {exc}")
                continue
            out.append((name or key, v, where))
        return out

    def variables(self, value: Any, mark: Mark, what: str) -> dict[str, Any]:
        m = self.mapping(value, mark, what)
        if m is None:
            return {}
        out = {}
        for key, v in m.items():
            name = str(key).lstrip("$")
            if not name.isidentifier():
                self.add(m.key_mark(key), f"{what}: {key!r} is not a variable name")
            elif isinstance(v, (Map, Seq)):
                self.add(m.value_mark(key), f"{what}: ${name} takes a number, string or layer")
            else:
                out[name] = v
        return out

    def decode(self, value: Any, mark: Mark, what: str) -> dict[str, Any]:
        m = self.mapping(value, mark, what)
        if m is None:
            return {}
        allowed = decode_keys()
        self.keys(m, allowed, what)
        out = {k: v for k, v in m.items() if k in allowed}
        for key in ("beam", "len_b", "max_tokens"):
            if key in out:
                out[key] = self.integer(out[key], m.value_mark(key), f"{what}: {key}")
        for key in ("alpha", "len_a"):
            if key in out:
                v = cfgmod.yaml_number(out[key])
                ok = isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
                if not ok:
                    self.add(m.value_mark(key), f"{what}: {key} takes a number >= 0")
                out[key] = float(v) if ok else None
        if "penalty" in out:
            out["penalty"] = self.choice(
                out["penalty"], m.value_mark("penalty"), f"{what}: penalty", PENALTIES
            )
        return {k: v for k, v in out.items() if v is not None}

    def significance(self, doc: Map, spec: Spec) -> None:
        m = self.mapping(doc.get("significance"), doc.value_mark("significance"), "significance")
        if m is None:
            return
        self.keys(m, SIGNIFICANCE_KEYS, "significance")
        if "test" in m:
            test = self.choice(m["test"], m.value_mark("test"), "significance: test", TESTS)
            spec.test = test or "bs"
        spec.samples = 10_000 if spec.test == "ar" else 1_000
        if "samples" in m:
            n = self.integer(m["samples"], m.value_mark("samples"), "significance: samples", 100)
            spec.samples = n or spec.samples

    def systems(self, doc: Map, spec: Spec) -> None:
        found = self.required(doc, "systems", MISSING["systems"])
        if found is None:
            return
        value, mark = found
        if not isinstance(value, Seq) or not value:
            self.add(mark, "systems takes a list, each item with name: and files:")
            return
        seen: dict[str, Mark] = {}
        for i, item in enumerate(value):
            where = value.item_mark(i)
            if not isinstance(item, Map):
                self.add(where, "a system takes name:, files: (or decode_of:), vars:, settings:")
                continue
            self.keys(item, SYSTEM_KEYS, "a system")
            name = (
                self.text(item.get("name"), item.value_mark("name"), "name")
                if "name" in item
                else None
            )
            if name is None:
                if "name" not in item:
                    self.add(where, "a system needs a name:")
                continue
            if not NAME.match(name):
                self.add(
                    item.value_mark("name"),
                    f"system name {name!r} must be a folder name (letters, digits, ._+-)",
                )
                continue
            if name in seen:
                self.add(
                    item.value_mark("name"),
                    f"system '{name}' is defined twice (first on line {seen[name].line})",
                )
                continue
            seen[name] = item.value_mark("name")
            system = SystemSpec(name, where)
            if "vars" in item:
                system.vars = self.variables(item["vars"], item.value_mark("vars"), f"{name}: vars")
            if "settings" in item:
                system.settings = self.settings(
                    item["settings"], item.value_mark("settings"), f"{name}: settings"
                )
            system.decode = {
                **spec.decode,
                **(
                    self.decode(item["decode"], item.value_mark("decode"), f"{name}: decode")
                    if "decode" in item
                    else {}
                ),
            }
            if "paper" in item:
                figure = item["paper"]
                if isinstance(figure, bool) or not isinstance(figure, (int, float, str)):
                    self.add(
                        item.value_mark("paper"),
                        "paper: takes the paper's figure for the row, a number or a short text",
                    )
                else:
                    system.paper = str(figure)
            if "claim" in item:
                system.claim = self.choice(item["claim"], item.value_mark("claim"), "claim", CLAIMS)
            if "seed_budget" in item:
                budget = item["seed_budget"]
                system.seed_budget = (
                    self.integer(budget, item.value_mark("seed_budget"), "seed_budget", 1) or 0
                )
            if "against" in item:
                system.against = self.text(item["against"], item.value_mark("against"), "against")
                self.refs[name, "against"] = item.value_mark("against")
            if "decode_of" in item:
                system.decode_of = self.text(
                    item["decode_of"], item.value_mark("decode_of"), "decode_of"
                )
                self.refs[name, "decode_of"] = item.value_mark("decode_of")
                for key in ("files", "vars", "settings"):
                    if key in item:
                        self.add(
                            item.key_mark(key),
                            f"system '{name}' decodes the runs of another system "
                            f"(decode_of:): it trains nothing, so it takes no {key}:",
                        )
            elif "files" not in item:
                self.add(where, f"system '{name}' needs files: (its .adl files) or decode_of:")
            else:
                system.files = self.files(item["files"], item.value_mark("files"), name)
            spec.systems.append(system)

    def files(self, value: Any, mark: Mark, name: str) -> list[Path]:
        items = value if isinstance(value, Seq) else [value]
        marks = (
            [value.item_mark(i) for i in range(len(value))] if isinstance(value, Seq) else [mark]
        )
        if not 1 <= len(items) <= 2 or not all(isinstance(v, str) for v in items):
            self.add(
                mark,
                f"system '{name}': files takes [ENC.adl, DEC.adl], or one MODEL.adl or JOINT.adl",
            )
            return []
        out = []
        for text, where in zip(items, marks):
            path, tried = resolve(text, self.base, model_file=True)
            if not path.is_file():
                self.add(
                    where,
                    f"system '{name}': no such file {text}",
                    "looked in " + " and ".join(str(t.parent) for t in tried),
                )
            out.append(path)
        return out

    def baseline(self, doc: Map, spec: Spec) -> None:
        found = self.required(doc, "baseline", MISSING["baseline"])
        name = self.text(*found, "baseline") if found else None
        if name is None:
            return
        names = [s.name for s in spec.systems]
        if name not in names:
            self.add(
                doc.value_mark("baseline"),
                f"baseline '{name}' is not one of the systems ({', '.join(names) or 'none'})",
                did_you_mean(name, names, ignore_case=True),
            )
        spec.baseline = name


PENALTIES = ("fairseq", "gnmt", "none")


def canonical_key(key: str) -> str | None:
    """``section.name`` of a setting written ``section.name`` or as an unambiguous bare
    ``name``; None when it is neither (set_value then says what is wrong)."""
    parts = key.split(".")
    if len(parts) == 3 and parts[:2] == ["model", "vars"]:
        return key
    names = cfgmod.keys()
    if key in names:
        return key
    owners = [k for k in names if k.split(".", 1)[1] == key]
    return owners[0] if len(owners) == 1 else None


def read_spec(path: str | Path) -> tuple[Spec, list[Problem]]:
    """The spec in ``path`` and the problems of its structure (none: it may still have
    problems in its systems' configurations; see :func:`plan.make_plan`)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text") from None
    try:
        doc, problems = load(text, str(path))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = Mark(str(path), mark.line + 1, mark.column + 1) if mark else Mark(str(path), 1, 1)
        raise SpecError([Problem(where, f"not valid YAML: {exc.problem}")], path) from None
    except yaml.YAMLError as exc:
        raise SpecError([Problem(Mark(str(path), 1, 1), f"not valid YAML: {exc}")], path) from None
    reader = _Reader(path)
    reader.problems = problems
    spec = reader.read(doc)
    return spec, reader.problems
