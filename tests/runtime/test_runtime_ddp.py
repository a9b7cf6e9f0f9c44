"""DDP on CPU: 2 processes (gloo) launched by torchrun hold identical weights after several
updates, split the data between them, and only rank 0 writes to the run directory."""

import json
import subprocess
import sys

import pytest
from conftest import run_cli, sets
from runtime_helpers import QUICK, data_args, env, model_files, reverse_task

from adl.runtime.model import checkpoint as ckpt

# Each rank trains through the runtime API, records the examples it trained on and every
# write it makes under the run directory (through an audit hook, which sees the writes of
# open(), os.open, rename/replace, mkdir, remove, link), then reports.
WORKER = r"""
import hashlib, json, os, sys
import torch
from adl import runtime

out, report, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
root = os.path.abspath(out)
writes = []
WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

def audit(event, a):
    if event == "open":
        path, mode, flags = a
        wants = (mode is not None and any(c in str(mode) for c in "wax+")) or (
            mode is None and isinstance(flags, int) and flags & WRITE)
        paths = [path] if wants else []
    elif event in ("os.rename", "os.link", "os.symlink"):
        paths = [a[1]]
    elif event in ("os.mkdir", "os.remove", "os.rmdir", "os.truncate", "shutil.copyfile"):
        paths = [a[0]]
    else:
        return
    for p in paths:
        if isinstance(p, (str, bytes, os.PathLike)) and os.path.abspath(os.fsdecode(p)).startswith(root):
            writes.append(f"{event} {os.fsdecode(p)}")

sys.addaudithook(audit)
config = runtime.configure(args["files"], preset="tiny", train=tuple(args["train"]),
                           valid=tuple(args["valid"]), sets=args["sets"])
seen = []
trainer = runtime.Trainer(config, out)
summary = trainer.run(on_step=lambda step, batches: seen.extend(
    i for b in batches for i in b.ids.tolist()))
trainer.close()
digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes()
                                 for p in trainer.state.model.parameters())).hexdigest()
rank = int(os.environ["RANK"])
with open(f"{report}/rank{rank}.json", "w") as f:
    json.dump({"rank": rank, "world": trainer.place.dist.world, "steps": summary.step,
               "seen": seen, "digest": digest, "writes": writes}, f)
"""


def test_two_gloo_processes_agree_split_the_data_and_only_rank_0_writes(tmp_path):
    paths = reverse_task(tmp_path / "data", train=160, valid=10)
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    report = tmp_path / "report"
    report.mkdir()
    args = {
        "files": model_files(tmp_path),
        "train": [paths["train"] + ".src", paths["train"] + ".tgt"],
        "valid": [paths["valid"] + ".src", paths["valid"] + ".tgt"],
        "sets": [
            "d_model=32",
            "max_tokens=128",
            "max_steps=0",
            "max_epochs=1",
            "valid_every=4",
            "log_every=2",
            "model.dropout=0.1",
            "threads=1",
        ],
    }
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node=2",
            str(script),
            str(tmp_path / "run"),
            str(report),
            json.dumps(args),
        ],
        env=env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    ranks = [json.loads((report / f"rank{i}.json").read_text()) for i in (0, 1)]
    assert [x["world"] for x in ranks] == [2, 2]
    # identical weights after several updates (with different dropout on each rank)
    assert ranks[0]["steps"] == ranks[1]["steps"] >= 4
    assert ranks[0]["digest"] == ranks[1]["digest"]
    # the data is split: no example on both ranks, and one epoch covers (almost) all
    seen0, seen1 = set(ranks[0]["seen"]), set(ranks[1]["seen"])
    assert seen0 and seen1 and not seen0 & seen1
    assert len(ranks[0]["seen"]) == len(seen0) and len(ranks[1]["seen"]) == len(seen1)
    assert len(seen0 | seen1) >= 160 - 128 // 4
    # only rank 0 writes: checkpoints, logs, metrics, config, tokenizer
    assert ranks[1]["writes"] == []
    written = "\n".join(ranks[0]["writes"])
    for part in ("checkpoints", "train.log", "metrics.jsonl", "config.yaml", "tokenizer"):
        assert part in written
    state = ckpt.load(tmp_path / "run" / "checkpoints" / "last.pt")
    assert state["step"] == ranks[0]["steps"] and len(state["rng"]) == 2
    log = (tmp_path / "run" / "train.log").read_text()
    assert "2 processes" in log and log.count("done (max epochs)") == 1


@pytest.mark.slow  # about 35 s: torchrun starts its workers
def test_adl_train_nproc_launches_torchrun(tmp_path):
    paths = reverse_task(tmp_path / "data", train=100, valid=5)
    out = tmp_path / "run"
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from adl.cli import main; sys.exit(main(sys.argv[1:]))",
            "train",
            *model_files(tmp_path),
            *data_args(paths),
            *QUICK,
            *sets("max_steps=4", "valid_every=2"),
            "--nproc",
            "2",
            "--out",
            str(out),
        ],
        env=env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.count(f"{out}: 4 steps") == 1  # one summary line, from rank 0
    assert len(ckpt.load(out / "checkpoints" / "last.pt")["rng"]) == 2
    # and it resumes in 2 processes (or says why not)
    code, _, err = run_cli(
        "train", "--resume", "--out", str(out), "--set", "max_steps=6", "--nproc", "2"
    )
    assert code == 0, err
    assert ckpt.load(out / "checkpoints" / "last.pt")["step"] == 6
