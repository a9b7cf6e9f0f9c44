"""The cost columns of a sweep: every system of the spec measured by the runtime's cost
instrument (adl.runtime.cost: training memory and speed, decoding speed, each against the
baseline in the same run), written to RESULTS/SPEC/cost.json beside the result files. The
architectures are measured, not the trained runs: the runs train side by side and their own
throughput depends on what ran beside them, the instrument's ratios do not."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from adl.runtime.cost import INSTRUMENT, Candidate, Workload, measure
from adl.runtime.sweep import results as res
from adl.runtime.sweep.plan import Plan, file_hash
from adl.runtime.sweep.spec import split_decode
from adl.runtime.sweep.state import write_text

LENGTH = 32  # tokens a sentence: about the length of the Bible verses the specs train on
# Decoded per measurement, and turns each model takes (the median counts). With 16 sentences
# a measurement took a quarter of a second and its rounds varied by up to 43% on a shared VM
# (Domhan's ENC-CNN at 0.76x of SELF-ATT in beam 4, 0.98x measured again); 64 sentences take
# a second or more, and the median of five rounds, each in a fresh process, outvotes a stray
# one.
SENTENCES = 64
ROUNDS = 5


def workload(plan: Plan) -> Workload:
    base = next(r for r in plan.runs if r.system == plan.spec.baseline)
    return Workload(
        lengths=(LENGTH,),
        batch_tokens=base.config.train.max_tokens,
        sentences=SENTENCES,
        rounds=ROUNDS,
        threads=1,
    )


def candidates(plan: Plan) -> list[Candidate]:
    """One per system: a trained system's model as its runs build it; a system that decodes
    another's runs, that model decoded its way (``decode_attention``)."""
    configs = {r.system: r.config for r in plan.runs}
    out = []
    for system in plan.spec.systems:
        trained = system.decode_of or system.name
        if trained not in configs:
            continue
        base = plan.spec.system(trained)
        assert base is not None
        options = {**base.decode, **system.decode}
        how = split_decode(options)[1].get("decode_attention")
        out.append(Candidate.of(system.name, base.files, configs[trained], decode_attention=how))
    return out


def portable(candidate: Candidate) -> dict[str, Any]:
    """A candidate as it counts for the cost file's hash: its files by their contents."""
    model = {
        k: ("file " + file_hash(v) if k in ("encoder", "decoder", "joint") and v else v)
        for k, v in candidate.model.items()
    }
    return {**asdict(candidate), "model": model}


def cost_hash(plan: Plan) -> str:
    return res.digest(
        {
            "candidates": [portable(c) for c in candidates(plan)],
            "workload": asdict(workload(plan)),
            "instrument": INSTRUMENT,
        }
    )


def up_to_date(plan: Plan, results: Path) -> bool:
    found = res.read_cost(results, plan.spec)
    return found is not None and found.get("hash") == cost_hash(plan)


def measure_costs(plan: Plan, results: Path, say: Callable[[str], object]) -> Path:
    """Measure every system of the spec and write its cost file; returns its path."""
    table = measure(candidates(plan), plan.spec.baseline, workload(plan), say)
    path = res.folder(results, plan.spec) / res.COST
    write_text(path, json.dumps({**table.to_json(), "hash": cost_hash(plan)}, indent=1) + "\n")
    return path
