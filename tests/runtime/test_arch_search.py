"""adl search (adl/runtime/search/): the pair of spaces as Optuna parameters, the search
folder's spec, the message without Optuna, the confirmation's sweep spec; and end to end on
the toy task: two workers on one storage, a kill -9 and a restart that continue the study
with no finished trial repeated, the report's best program checked by adl compile."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from adl.runtime.search.confirm import write_spec
from adl.runtime.search.programs import Spaces
from adl.runtime.search.spec import SearchError, Spec, settle

sys.path.insert(0, str(ROOT / "bench"))
from toy_task import write_reverse_pairs  # noqa: E402

optuna = pytest.importorskip("optuna")

ENC = "pos -> repeat({1..2}, res_nd({mh_dot_self_att | rnn}) -> res_nd(ffl)) -> norm\n"
DEC = "pos -> res_nd({mh_dot_self_att | cnn}) -> res_nd(mh_dot_src_att) -> res_nd(ffl) -> norm\n"


def toy(tmp_path: Path) -> list[str]:
    """The spaces and data of the toy search; the command's arguments."""
    write_reverse_pairs(tmp_path / "data", {"train": 300, "valid": 30, "test": 30}, lengths=(3, 6))
    (tmp_path / "enc.space.adl").write_text(ENC)
    (tmp_path / "dec.space.adl").write_text(DEC)
    return [
        str(tmp_path / "enc.space.adl"),
        str(tmp_path / "dec.space.adl"),
        *("--train", str(tmp_path / "data" / "train"), "--valid", str(tmp_path / "data" / "valid")),
        *("--langs", "src", "tgt", "--preset", "tiny", "--steps", "30", "--valid-every", "10"),
        *("--set", "train.log_every=10", "--set", "train.valid_bleu_sentences=30"),
    ]


def toy_spec(tmp_path: Path, enc: str = ENC, **settings) -> Spec:
    """The toy search's spec on its data (written by :func:`toy`)."""
    args = toy(tmp_path)
    return Spec(
        enc,
        DEC,
        train=[args[3] + ".src", args[3] + ".tgt"],
        valid=[args[5] + ".src", args[5] + ".tgt"],
        **settings,
    )


def spec(**settings) -> Spec:
    return Spec(ENC, DEC, train=["t.src", "t.tgt"], valid=["v.src", "v.tgt"], **settings)


def test_the_spaces_are_optuna_parameters_asked_only_where_reached():
    spaces = Spaces(spec())
    assert spaces.size == 8
    study = optuna.create_study()
    trial = study.ask()
    program = spaces.suggest(trial)
    assert set(trial.params) == {"enc 1:15", "enc 1:30", "dec 1:15"}
    assert trial.params["enc 1:15"] in (1, 2)  # a range: an integer parameter
    assert program.encoder.startswith(f"pos -> repeat({trial.params['enc 1:15']}, res_nd(")
    fixed = study.ask(fixed_distributions=trial.distributions)
    study.enqueue_trial(trial.params)
    again = spaces.suggest(study.ask())
    assert again.key == program.key and fixed is not None
    assert (
        spaces.first().encoder
        == "pos -> repeat(1, res_nd(mh_dot_self_att) -> res_nd(ffl)) -> norm\n"
    )


def test_a_search_folder_refuses_other_settings(tmp_path):
    settle(spec(), tmp_path)
    assert settle(spec(), tmp_path) == spec()
    with pytest.raises(SearchError, match=r"other settings \(decoder, steps\)"):
        settle(
            Spec(
                ENC, DEC + "# other\n", train=["t.src", "t.tgt"], valid=["v.src", "v.tgt"], steps=5
            ),
            tmp_path,
        )
    with pytest.raises(SearchError, match="unknown objective 'speedy'"):
        spec(objectives=["bleu", "speedy"]).checked()


def test_a_search_without_a_budget_is_refused(tmp_path):
    from adl.runtime.search.study import run

    with pytest.raises(
        SearchError, match="give a budget: --trials N, --hours H or --study-hours H"
    ):
        run(spec(), tmp_path)


def test_without_optuna_adl_search_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)  # import optuna raises ImportError
    args = toy(tmp_path)
    code, _, err = run_cli("search", *args, "--trials", "1", "--out", str(tmp_path / "s"))
    assert code == 1
    assert "adl search needs Optuna: pip install 'adl[search]'" in err


def test_the_confirmation_is_a_sweep_spec_of_the_top_programs(tmp_path):
    s = Spec(
        ENC,
        DEC,
        train=[f"{tmp_path}/d/train.src", f"{tmp_path}/d/train.tgt"],
        valid=[f"{tmp_path}/d/valid.src", f"{tmp_path}/d/valid.tgt"],
        sets=["optim.lr=1e-3", "train.max_steps=9"],
    )
    path = write_spec(
        tmp_path,
        s,
        [("T3", "pos -> ffl\n", "pos -> res_nd(mh_dot_src_att)\n")],
        ("pos\n", "pos -> mh_dot_src_att\n"),
        "/x/test",
        3,
        40,
    )
    import yaml

    doc = yaml.safe_load(path.read_text())
    assert doc["data"] == {
        "train": f"{tmp_path}/d/train",
        "valid": f"{tmp_path}/d/valid",
        "test": "/x/test",
        "langs": ["src", "tgt"],
    }
    assert doc["settings"] == {"optim.lr": 0.001} and doc["budget"] == {"steps": 40}
    assert [x["name"] for x in doc["systems"]] == ["BASELINE", "T3"] and doc["seeds"] == 3
    assert (path.parent / "T3.enc.adl").read_text() == "pos -> ffl\n"


def test_a_worker_killed_as_its_trial_starts_leaves_a_trial_known_dead(tmp_path):
    from adl.runtime.search.study import announce, fail_dead

    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 's.db'}", study_name="s")
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a worker's pid, its process gone
    host = socket.gethostname()
    unnamed = study.ask()  # a trial as study.optimize starts one: RUNNING, no pid yet
    assert fail_dead(study) == 0  # nothing tells it from a trial starting now
    announce(study, host, gone.pid)
    named = study.ask()  # the announced trial: RUNNING with the worker's host and pid
    assert named.number != unnamed.number and named.user_attrs == {"host": host, "pid": gone.pid}
    assert fail_dead(study) == 1  # failed, and retried
    states = optuna.trial.TrialState
    (retry,) = study.get_trials(states=(states.WAITING,))
    assert retry.system_attrs["failed_trial"] == named.number
    assert study.trials[named.number].state == states.FAIL
    announce(study, host, os.getpid())  # a retry waits: the worker takes it, queues nothing
    assert len(study.get_trials(states=(states.WAITING,))) == 1


def _trials(folder: Path) -> list:
    if not (folder / "study.db").is_file():
        return []
    try:
        study = optuna.load_study(study_name="search", storage=f"sqlite:///{folder / 'study.db'}")
        return study.get_trials(deepcopy=False)
    except Exception:  # the study is being created
        return []


def _starts(folder: Path) -> dict[str, list[dict]]:
    return {
        p.parent.name: [json.loads(line) for line in p.read_text().splitlines()]
        for p in (folder / "programs").glob("*/starts.jsonl")
    }


def _training(trials: list, starts: dict[str, list[dict]]) -> list:
    """The running trials that train their program (a start of theirs in its run folder),
    not ones finding it busy."""
    return [
        t
        for t in trials
        if t.state == optuna.trial.TrialState.RUNNING
        and any(s["trial"] == t.number for s in starts.get(t.user_attrs.get("program"), []))
    ]


@pytest.mark.slow
def test_two_workers_a_kill_and_a_restart_train_no_finished_trial_twice(tmp_path):
    out = tmp_path / "s"
    command = [sys.executable, "-m", "adl", "search", *toy(tmp_path), "--out", str(out)]
    command += ["--trials", "5", "--workers", "2", "--threads", "1"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    log = open(tmp_path / "first.log", "w")
    first = subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )
    done_before: set[str] = set()
    finished: list = []
    running: list = []
    pids_before: set[int] = set()
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and first.poll() is None:
            trials = _trials(out)
            finished = [
                t
                for t in trials
                if t.state.is_finished()
                and "skipped" not in t.user_attrs
                and t.state != optuna.trial.TrialState.FAIL
            ]
            running = _training(trials, _starts(out))
            # both workers hold trials: the spawned one starts seconds after the search's own
            # (it imports torch), and a loaded machine can finish a trial before then
            # (a WAITING trial is a worker's announcement of its next one: a worker of the
            # restart may take it and write its own pid)
            pids_before = {
                t.user_attrs["pid"]
                for t in trials
                if "pid" in t.user_attrs and t.state != optuna.trial.TrialState.WAITING
            }
            if finished and running and len(pids_before) == 2:
                break
            time.sleep(1)
        done_before = {t.user_attrs["program"] for t in finished}
        assert done_before and running and len(pids_before) == 2, (
            tmp_path / "first.log"
        ).read_text()[-3000:]
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the search and its workers, mid-trial
        first.wait()
    starts_before = _starts(out)
    # the programs being trained at the kill (the trial seen may have finished since)
    cut = {t.user_attrs["program"] for t in _training(_trials(out), starts_before)}
    second = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    trials = _trials(out)
    states = optuna.trial.TrialState
    trained = [
        t
        for t in trials
        if t.state in (states.COMPLETE, states.PRUNED) and "skipped" not in t.user_attrs
    ]
    keys = [t.user_attrs["program"] for t in trained]
    assert len(trained) == 5 and len(set(keys)) == 5  # no program trained in two trials
    pids = {t.user_attrs["pid"] for t in trials if "pid" in t.user_attrs}
    assert first.pid in pids_before <= pids  # the first run's two workers' trials are kept
    assert pids - pids_before  # and the restart's workers trained the rest
    starts = _starts(out)
    for key in done_before:  # a trial finished before the kill is not trained again
        assert starts[key] == starts_before[key]
    killed = [t for t in trials if t.state == states.FAIL and "skipped" not in t.user_attrs]
    for t in killed:  # the trials under way at the kill: failed, each retried once, with the
        # program it had chosen (one killed before it chose, or while choosing: its retry keeps
        # the choices made and makes the rest)
        retries = [r for r in trials if r.system_attrs.get("failed_trial") == t.number]
        assert len(retries) == 1
        assert t.params.items() <= retries[0].params.items()
    # the programs being trained at the kill: resumed by a retry, which trained them to the end
    # (a killed trial that had not started training, such as one that was finding its program
    # busy, is retried too, and its retry skips the program trained by the other)
    assert cut and cut <= {t.user_attrs.get("program") for t in killed}
    for key in cut:
        (owner,) = [r for r in trained if r.user_attrs["program"] == key]
        assert owner.system_attrs.get("failed_trial") in {t.number for t in killed}
        assert starts[key][-1]["trial"] == owner.number
        assert len(starts[key]) == len(starts_before[key]) + 1  # one start after the restart
    found = subprocess.run(
        [sys.executable, "-m", "adl", "search", "report", str(out)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert found.returncode == 0, found.stderr
    best = json.loads((out / "report.json").read_text())["best"][0]
    assert f"| 1 | {best['trial']} | `{best['program']}` |" in found.stdout
    (tmp_path / "best.enc.adl").write_text(best["encoder"])
    (tmp_path / "best.dec.adl").write_text(best["decoder"])
    assert best["encoder"] in found.stdout and (out / "report.png").is_file()
    code, text, err = run_cli(
        "compile", "--check", str(tmp_path / "best.enc.adl"), str(tmp_path / "best.dec.adl")
    )
    assert code == 0 and text.count(": ok (") == 2, err


def test_the_report_counts_the_hours_of_the_ended_trials():
    import datetime

    from adl.runtime.search.study import spent

    start = datetime.datetime(2026, 12, 1, 10, 0, 0)
    states = optuna.trial.TrialState
    made = [
        optuna.trial.create_trial(state=s, value=v, user_attrs={})
        for s, v in ((states.COMPLETE, 1.0), (states.PRUNED, None), (states.FAIL, None))
    ]
    for trial, minutes in zip(made, (90, 30, 600)):  # 2 hours trained; the failed one cut
        trial.datetime_start = start
        trial.datetime_complete = start + datetime.timedelta(minutes=minutes)
    running = optuna.trial.create_trial(state=states.RUNNING)
    running.datetime_start, running.datetime_complete = start, None  # not ended: not counted
    assert spent([*made, running]) == pytest.approx(2.0)
    assert spent([]) == 0.0


def test_the_study_hours_stop_the_workers_over_every_command():
    import datetime

    from adl.runtime.search.study import Budget, over

    now = datetime.datetime.now()
    states = optuna.trial.TrialState
    trials = []
    for state, minutes, attrs in (  # 90 minutes trained; 30 skipped (they trained nothing)
        (states.COMPLETE, 60, {}),
        (states.PRUNED, 30, {}),
        (states.FAIL, 600, {}),  # cut with its worker, failed a session later: its retry counts
        (states.COMPLETE, 30, {"skipped": "busy"}),
    ):
        value = 1.0 if state == states.COMPLETE else None
        trial = optuna.trial.create_trial(state=state, value=value, user_attrs=attrs)
        trial.datetime_start = now - datetime.timedelta(hours=5)
        trial.datetime_complete = trial.datetime_start + datetime.timedelta(minutes=minutes)
        trials.append(trial)
    assert not over(Budget(hours=2.0), trials, 2, False)
    assert over(Budget(hours=1.5), trials, 2, False)
    assert not over(Budget(), trials, 2, False)  # no budget at all: the caller's to refuse
    running = optuna.trial.create_trial(state=states.RUNNING)
    running.datetime_start = now - datetime.timedelta(minutes=40)  # so far: 2 h 10 in all
    trials.append(running)
    assert over(Budget(hours=2.0), trials, 3, False)
    assert not over(Budget(hours=2.5), trials, 3, False)
    # a budget of trials lets a waiting retry train past it, in its failed trial's place
    assert over(Budget(trials=3), trials, 3, False) and not over(Budget(trials=3), trials, 3, True)


def test_a_pareto_trials_mirror_is_asked_without_the_heartbeat_warning(tmp_path):
    """Optuna warns on ask() where the storage beats hearts; the curves study (which
    prunes a Pareto search, its trials asked and told by the worker) has no heartbeat, the
    study of the trials has (the warning was in the log once a trial)."""
    import warnings

    from adl.runtime.search.study import open_study

    url = f"sqlite:///{tmp_path / 'study.db'}"
    s = spec(objectives=["bleu", "speed"])
    study, curves = open_study(s, url), open_study(s, url, curves=True)
    with pytest.warns(UserWarning, match="Heartbeat of storage"):
        study.ask()  # the study of the trials beats hearts: the warning it is opened without
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mirror = curves.ask()
    assert mirror.number == 0 and curves.directions == [optuna.study.StudyDirection.MAXIMIZE]


def test_a_document_block_is_the_search_report_regenerated(tmp_path):
    from adl.runtime.search.report import update_doc
    from adl.runtime.search.trial import write_first

    folder = tmp_path / "docs" / "results" / "s"
    s = toy_spec(tmp_path, preset="tiny")
    settle(s, folder)
    first = Spaces(s).first()
    write_first(folder, first)
    study = optuna.create_study(storage=f"sqlite:///{folder / 'study.db'}", study_name="search")
    enc = "pos -> repeat(2, res_nd(rnn) -> res_nd(ffl)) -> norm\n"
    for bleu, program, encoder in ((7.5, "p1", first.encoder), (9.25, "p2", enc)):
        trial = study.ask()
        attrs = {"program": program, "enc": encoder, "dec": first.decoder, "costs": {"params": 9}}
        for key, value in attrs.items():
            trial.set_user_attr(key, value)
        study.tell(trial, bleu)
    doc = tmp_path / "docs" / "search.md"
    doc.write_text(
        "# Search\n\n<!-- adl search report results/s -->\nold\n<!-- end of adl search report -->\n"
    )
    assert update_doc(doc) == ["results/s"]
    text = doc.read_text()
    assert "old" not in text and "Trials: 2 trained (2 complete, 0 pruned)" in text
    assert "| 1 | 1 | `p2` | 9.25 |" in text and "| 2 | 0 | `p1` | 7.50 |" in text
    assert "### 1. trial 1 (program p2)" in text and enc.strip() in text
    assert "# Search s" not in text  # the document's own title, not the report's
    assert update_doc(doc, write=False) == [] and not (folder / "report.md").exists()
    code, out, err = run_cli("search", "report", "--update-doc", str(doc))
    assert code == 0 and out.strip() == f"{doc}: up to date", err


def test_the_search_document_holds_the_committed_study():
    """docs/search.md's report blocks are what ``adl search report`` makes of the committed
    study (regenerate with ``adl search report --update-doc docs/search.md``)."""
    from adl.runtime.search.report import update_doc

    assert update_doc(ROOT / "docs" / "search.md", write=False) == [], (
        "run adl search report --update-doc docs/search.md"
    )


def test_a_trial_drops_the_presets_variables_its_program_does_not_read(tmp_path):
    """The demo preset sets $layers; a space deciding its depth as $depth does not read it,
    and a trial's files (enc.adl, dec.adl: no role in their names) must still train."""
    from adl.runtime.model.build import check_model_files
    from adl.runtime.search.trial import trial_config

    enc = "$depth = {1..2}\npos -> repeat($depth, res_nd(rnn) -> res_nd(ffl)) -> norm\n"
    s = toy_spec(tmp_path, enc, preset="demo")
    program = Spaces(s).first()
    files = program.write(tmp_path / "programs" / program.key)
    assert [f.name for f in files] == ["enc.adl", "dec.adl"]
    config = trial_config(s, tmp_path, files, 1)
    assert "layers" not in config.model.vars
    config.model.encoder, config.model.decoder = str(files[0]), str(files[1])
    check_model_files(config.model)  # no "variable $layers is set but none reads it"


def test_the_cost_of_a_program_is_measured_beside_the_spaces_first(tmp_path):
    """The baseline's files go encoder first (sorted, first.dec.adl came before
    first.enc.adl and every trial of a speed search failed after training)."""
    from adl.runtime.search.trial import measure_costs, trial_config, write_first

    s = toy_spec(tmp_path, preset="tiny", objectives=["bleu", "speed"])
    first = Spaces(s).first()
    written = write_first(tmp_path, first)
    assert [p.name for p in written] == ["first.enc.adl", "first.dec.adl"]
    files = first.write(tmp_path / "programs" / first.key)
    costs = measure_costs(s, tmp_path, trial_config(s, tmp_path, files, 1), files)
    assert costs["speed"] > 0 and costs["greedy_sentences_per_s"] > 0
