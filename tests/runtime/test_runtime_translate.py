"""``adl translate`` and ``adl eval`` on a run trained by the tests."""

import io
import shutil
import sys
import time

import pytest
import torch
from conftest import copy_of, run_cli
from runtime_helpers import translate_lines

from adl.runtime.model import checkpoint as ckpt
from adl.runtime.search_options import SearchOptions


@pytest.fixture(scope="module")
def run(tmp_path_factory, reverse_run_once):
    """The session's reverse-task run, a copy of the module's own (its tests share it)."""
    return copy_of(reverse_run_once, tmp_path_factory.mktemp("translate"))


def translate(monkeypatch, *argv, stdin=""):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode("utf-8"))))
    return run_cli("translate", *argv)


def test_translate_stdin_to_stdout(run, monkeypatch):
    tmp, out = run
    code, stdout, err = translate(
        monkeypatch, "--model", str(out), "--beam", "4", stdin="a b c d\n\nq r s\n"
    )
    assert code == 0, err
    lines = stdout.split("\n")
    assert len(lines) == 4 and lines[1] == "" and lines[3] == ""  # one line per input line
    assert lines[0] == "d c b a" and lines[2] == "s r q"


def test_translate_files_and_nbest(run, tmp_path):
    tmp, out = run
    hyp = tmp_path / "out.txt"
    lines = ["a b c", "f g h i j"]
    options = ("--beam", "3", "--checkpoint", "last")
    code, _, err = translate_lines(out, lines, tmp_path, "--output", str(hyp), *options)
    assert code == 0, err
    assert hyp.read_text().splitlines() == ["c b a", "j i h g f"]
    code, stdout, err = translate_lines(out, lines, tmp_path, "--beam", "3", "--nbest", "3")
    assert code == 0, err
    rows = [line.split(" ||| ") for line in stdout.splitlines()]
    assert [r[0] for r in rows] == ["0"] * 3 + ["1"] * 3
    assert rows[0][1] == "c b a"
    scores = [float(r[3]) for r in rows[:3]]
    assert scores == sorted(scores, reverse=True)


def test_greedy_is_beam_1(run, tmp_path):
    tmp, out = run
    lines = [" ".join("abcdefghij"[i : i + 4]) for i in range(6)]
    outs = []
    for beam in ("1", "1"):
        code, stdout, err = translate_lines(out, lines, tmp_path, "--beam", beam)
        outs.append(stdout)
    assert outs[0] == outs[1]


@pytest.mark.training
def test_eval_of_a_run_and_of_a_hypothesis_file(run, tmp_path):
    tmp, out = run
    data = tmp / "data"
    code, stdout, err = run_cli(
        "eval",
        "--model",
        str(out),
        "--src",
        str(data / "valid.src"),
        "--ref",
        str(data / "valid.tgt"),
        "--beam",
        "2",
        "--output",
        str(tmp_path / "hyp.txt"),
    )
    assert code == 0, err
    assert stdout.startswith("BLEU = ") and "signature: nrefs:1|" in stdout and "chrF2 = " in stdout
    bleu = float(stdout.split()[2])
    assert bleu > 50
    code, again, err = run_cli(
        "eval", "--hyp", str(tmp_path / "hyp.txt"), "--ref", str(data / "valid.tgt")
    )
    assert code == 0, err
    assert again == stdout


def test_a_moved_run_still_translates(run, tmp_path, monkeypatch):
    tmp, out = run
    moved = tmp_path / "elsewhere"
    shutil.copytree(out, moved)
    (moved / "tokenizer").rename(moved / "gone")  # the checkpoint carries everything
    code, stdout, err = translate(monkeypatch, "--model", str(moved), stdin="e f g\n")
    assert code == 0, err
    assert stdout == "g f e\n"


def test_bad_input_gets_one_clear_message(run, tmp_path, monkeypatch):
    tmp, out = run
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"a b c\n\xff\xfe d\n")
    code, _, err = run_cli("translate", "--model", str(out), "--input", str(bad))
    assert code == 1 and f"{bad}:2: not valid UTF-8" in err and "Traceback" not in err
    good = tmp_path / "good.txt"
    good.write_text("a b\n")
    code, _, err = run_cli("translate", "--model", str(tmp_path / "nothing"), "--input", str(good))
    assert code == 1 and "no such run directory or checkpoint file" in err
    # a checkpoint whose weights belong to another architecture
    state = ckpt.load(out / "checkpoints" / "last.pt")
    state["spec"] = dict(
        state["spec"], decoder="pos -> repeat(2, res_nd(rnn) -> res_nd(mh_dot_src_att)) -> norm\n"
    )
    other = tmp_path / "other.pt"
    torch.save(state, other)
    code, _, err = translate(monkeypatch, "--model", str(other), stdin="a b\n")
    assert code == 1 and "weights do not fit the model it describes" in err
    code, _, err = run_cli("eval", "--hyp", str(bad), "--ref", str(tmp / "data" / "valid.tgt"))
    assert code == 1 and "not valid UTF-8" in err
    short = tmp_path / "short.txt"
    short.write_text("x\n")
    code, _, err = run_cli("eval", "--hyp", str(short), "--ref", str(tmp / "data" / "valid.tgt"))
    assert code == 1 and "has 1 lines but" in err
    assert run_cli("eval", "--ref", str(short))[0] == 2
    assert run_cli("translate", "--model", str(out), "--beam", "0")[0] == 2


def _readline(stream, seconds=60.0) -> str:
    """One line of a child's output, or a failure after ``seconds`` (never a hang)."""
    import select

    ready, _, _ = select.select([stream], [], [], seconds)
    assert ready, "no output line in time"
    return stream.readline()


def test_translate_streams_each_line_before_the_next_is_written(run):
    import signal
    import subprocess

    from runtime_helpers import start_adl

    tmp, out = run
    # what each line translates to, read from a file (the model's quality is not what is tested
    # here: a 300-step model's outputs vary with the CPU's kernels)
    code, whole, err = run_cli(
        "translate", "--model", str(out), "--beam", "2", "--input", str(_lines(tmp))
    )
    assert code == 0, err
    first, third, fourth = (line + "\n" for line in whole.splitlines())

    def start() -> subprocess.Popen:
        return start_adl("translate", "--model", str(out), "--beam", "2", stdin=subprocess.PIPE)

    child = start()
    try:
        child.stdin.write("a b c d\n")
        child.stdin.flush()
        assert _readline(child.stdout) == first  # before the second line exists
        child.stdin.write("\n")
        child.stdin.flush()
        assert _readline(child.stdout) == "\n"  # an empty line gives an empty line
        child.stdin.write("q r s\n")
        child.stdin.close()  # Ctrl-D: the end of the input ends it cleanly
        assert _readline(child.stdout) == third
        assert child.wait(60) == 0
        assert "Traceback" not in child.stderr.read()
    finally:
        child.kill()
        child.wait()
    # Ctrl-C: exit 130, no traceback, the lines already translated already written
    child = start()
    try:
        child.stdin.write("e f g\n")
        child.stdin.flush()
        assert _readline(child.stdout) == fourth
        child.send_signal(signal.SIGINT)
        assert child.wait(60) == 130
        err = child.stderr.read()
        assert "Traceback" not in err and "interrupted" in err
    finally:
        child.kill()
        child.wait()


def _lines(tmp):
    """The streaming test's lines, one per line of a file."""
    path = tmp / "stream.txt"
    path.write_text("a b c d\nq r s\ne f g\n")
    return path


def test_out_of_range_search_settings_are_refused_with_one_message(run):
    tmp, out = run
    for flag, value, words in (
        ("--max-tokens", "0", "batch size must be at least 1"),
        ("--alpha", "nan", "alpha must be a finite number"),
        ("--len-a", "-1", "len_a must be a finite number >= 0"),
        ("--len-b", "-3", "len_b must be >= 0"),
        ("--nbest", "6", "nbest must be between 1 and the beam size (5)"),
    ):  # usage errors, as --beam 0 is
        code, stdout, err = run_cli("translate", "--model", str(out), flag, value)
        assert code == 2 and stdout == "", (flag, err)
        assert words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def _learn_pos_checkpoint(out, tmp_path, positions: int):
    """A checkpoint of the run's tokenizers with an (untrained) learn_pos model."""
    import adl

    state = ckpt.load(out / "checkpoints" / "last.pt")
    spec = dict(state["spec"])
    spec["encoder"] = f"learn_pos(max_seq_len={positions}) -> res_nd(ffl) -> norm\n"
    spec["decoder"] = (
        f"learn_pos(max_seq_len={positions}) -> res_nd(mh_dot_self_att) -> "
        "res_nd(mh_dot_src_att) -> norm\n"
    )
    torch.manual_seed(0)
    model = adl.build_from_spec(spec)
    state["spec"], state["model"] = model.spec.to_dict(), model.state_dict()
    path = tmp_path / "learn_pos.pt"
    torch.save(state, path)
    return path


def test_an_overlong_line_is_cut_with_a_warning_and_loses_no_other_line(run, tmp_path):
    tmp, out = run
    path = _learn_pos_checkpoint(out, tmp_path, positions=8)
    src = tmp_path / "in.txt"
    long_line = " ".join("abcdefghijklmnopqrst")  # 20 pieces and more: over 7 positions
    for beam in ("1", "3"):
        code, stdout, err = translate_lines(
            path, ["a b", long_line, "c d"], tmp_path, "--beam", beam
        )
        assert code == 0 and "Traceback" not in err, err
        assert len(stdout.split("\n")) == 4  # three output lines
        warnings = [line for line in err.splitlines() if "warning" in line]
        assert len(warnings) == 1 and f"{src}:2:" in warnings[0]
        assert "more than the model's 7 source positions" in warnings[0]
        assert "learn_pos(max_seq_len=8)" in warnings[0]
    # the Python API cuts it the same way and says so as a warning
    from adl.runtime.decode.translator import Translator

    translator = Translator.load(path)
    with pytest.warns(UserWarning, match="line 2: .* more than the model's 7 source positions"):
        found = translator.translate(["a b", long_line, "c d"], beam=2)
    assert len(found) == 3


def test_one_translation_checks_its_search_options_once(run, monkeypatch, tmp_path):
    """The options are made, and so checked, once per translation, whatever the door."""
    import adl
    from adl.runtime import search_options

    checks = []
    check = search_options.check_options
    monkeypatch.setattr(search_options, "check_options", lambda o: checks.append(o) or check(o))
    tmp, out = run
    code, stdout, err = translate(monkeypatch, "--model", str(out), "--beam", "2", stdin="a b\nc\n")
    assert code == 0 and len(stdout.splitlines()) == 2, err
    assert len(checks) == 1 and checks[0].beam == 2
    source, ref = tmp_path / "src.txt", tmp_path / "ref.txt"
    source.write_text("a b\nc d\n")
    ref.write_text("b a\nd c\n")
    code, _, err = run_cli("eval", "--model", str(out), "--src", str(source), "--ref", str(ref))
    assert code == 0 and len(checks) == 2, err
    adl.load_model(out).translate(["a b c", "d e"], beam=2, nbest=2)
    assert len(checks) == 3


@pytest.mark.parametrize("kind", ["dynamic", "weight"])
def test_int8_translates_as_the_float_model(run, tmp_path, kind):
    """torchao's int8 linear layers (the quant extra): the same translations of the learned
    reverse task as float32, and log-probabilities within a few hundredths of it."""
    from adl.runtime.decode.translator import load_model

    tmp, out = run
    lines = [" ".join("abcdefghij"[i : i + 4]) for i in range(6)]
    code, float_out, err = translate_lines(out, lines, tmp_path, "--beam", "4")
    assert code == 0, err
    code, int8_out, err = translate_lines(out, lines, tmp_path, "--beam", "4", "--int8", kind)
    assert code == 0, err
    assert int8_out == float_out
    assert float_out.splitlines()[0] == "d c b a"
    exact, quantized = load_model(out), load_model(out, int8=kind)
    kinds = lambda t: {
        type(m.weight).__name__
        for m in t.model.modules()
        if isinstance(m, torch.nn.Linear) and m is not t.model.output
    }
    assert kinds(exact) == {"Parameter"} and kinds(quantized) == {"Int8Tensor"}
    # the vocabulary's logits stay in float32: the float model's own weights
    assert type(quantized.model.output.weight) is torch.nn.Parameter
    assert torch.equal(quantized.model.output.weight, exact.model.output.weight)
    sources, targets = ["a b c d", "f g h"], ["d c b a", "h g f"]
    a, b = exact.score(sources, targets), quantized.score(sources, targets)
    assert a != b  # the int8 model is not the float one...
    assert a == pytest.approx(b, abs=0.05)  # ...but close to it


def test_int8_refusals(run, tmp_path):
    from adl.runtime.decode.quantize import int8
    from adl.runtime.decode.translator import load_model
    from adl.runtime.errors import ConfigError

    tmp, out = run
    with pytest.raises(ConfigError, match="unknown int8 kind 'int4'"):
        int8(torch.nn.Linear(2, 2), "int4")
    with pytest.raises(ConfigError, match="int8 decoding runs on the CPU"):
        load_model(out, device="meta", int8="dynamic")
    code, _, err = translate_lines(
        out, ["a b"], tmp_path, "--engine", "ctranslate2", "--int8", "weight"
    )
    assert code != 0 and "--int8 is for --engine adl" in err


def test_no_int8_path_calls_the_deprecated_quantization(root):
    """int8 goes through torchao: nothing in the package or the benchmarks calls
    torch.ao.quantization (PyTorch deprecates its quantize_dynamic)."""
    files = [*(root / "adl").rglob("*.py"), *(root / "bench").rglob("*.py")]
    found = [
        str(f.relative_to(root))
        for f in files
        if any(
            "quantize_dynamic(" in line
            or "import torch.ao.quantization" in line
            or "from torch.ao.quantization" in line
            or "torch.ao.quantization." in line
            for line in f.read_text("utf-8").splitlines()
            if not line.lstrip().startswith(("#", "`", "torchao's")) and "``" not in line
        )
    ]
    assert files and found == []


@pytest.mark.slow
def test_a_compiled_step_translates_as_the_eager_one(run):
    """adl.load_model(..., compiled=...): the reverse task's translations, greedy and beam 4,
    as the eager search finds them (adl.runtime.decode.compiled)."""
    from adl.runtime.decode.translator import load_model

    tmp, out = run
    lines = [" ".join("abcdefghij"[i : i + 3 + i % 4]) for i in range(7)]
    eager, compiled = load_model(out), load_model(out, compiled="default")
    for beam in (1, 4):
        assert compiled.translate(lines, beam=beam) == eager.translate(lines, beam=beam)
    assert compiled.translate("a b c d", beam=4) == "d c b a"


def test_compiled_refusals(run, monkeypatch):
    from adl.runtime.decode import translator
    from adl.runtime.decode.translator import load_model
    from adl.runtime.errors import ConfigError

    tmp, out = run
    with pytest.raises(ConfigError, match="an ensemble decodes eagerly"):
        load_model([out, out], compiled="default")
    with pytest.raises(ConfigError, match="compiled must be one of"):
        load_model(out, compiled="fastest")
    # workers that would be threads (a GPU, or more threads than workers)
    monkeypatch.setattr(translator, "forks_workers", lambda device, threads: False)
    with pytest.raises(ConfigError, match="several batches at once only in forked processes"):
        load_model(out, compiled="default").translate("a b c", workers=2)


def test_a_compiled_step_s_forked_workers_translate_as_one_search(run, monkeypatch):
    """Forked workers search through a compiled step (its static cache, run here without
    torch.compile), kept for it: the lines of one search with two workers, greedy and beam
    4, as the eager model's one search; a later search takes the same workers."""
    from adl.runtime.decode import translator, workers
    from adl.runtime.decode.translator import load_model

    for where in (translator, workers):
        monkeypatch.setattr(where, "forks_workers", lambda device, threads: True)
    tmp, out = run
    lines = [" ".join("abcdefghij"[i : i + 2 + i % 5]) for i in range(9)]
    eager, model = load_model(out), load_model(out, compiled="default")
    model.steps.compiled = model.steps.next_logp  # the static cache, eagerly
    for beam in (1, 4):
        small = {"beam": beam, "max_tokens": 6 * beam}  # batches of a few lines
        assert model.translate(lines, workers=2, **small) == eager.translate(lines, **small)
        kept = workers._kept[model.steps][1]
        assert model.translate(lines[:3], workers=2, **small) == eager.translate(lines[:3], **small)
        assert workers._kept[model.steps][1] is kept
    workers.forget(model.steps)


def test_a_search_tells_a_compiled_step_its_length_rule_in_the_searching_process():
    """search_batch tells the model its length rule (a compiled step's plan) where it
    searches: a forked worker's copy of the step holds the rule of the fork's time."""
    from adl.runtime.decode.driver import search_batch

    told = []

    class Planned:
        needs_src_words = False

        def plan(self, len_a, len_b, cap):
            told.append((len_a, len_b, cap))
            raise RuntimeError("told")

    with pytest.raises(RuntimeError, match="told"):
        options = SearchOptions(len_a=1.5, len_b=7)
        search_batch(Planned(), None, [[5, 6]], options, "cpu", 20)
    assert told == [(1.5, 7, 20)]


@pytest.mark.parametrize("processes", [True, False], ids=["processes", "threads"])
def test_workers_translate_as_one_search_does(run, monkeypatch, processes):
    """Two workers (each over its own batches) translate the lines as one search: forked
    processes (a CPU's, one thread each) and threads (a GPU's, or more threads each)."""
    from adl.runtime.decode import workers
    from adl.runtime.decode.translator import load_model

    assert workers.forks_workers("cpu", 1)  # a Linux CPU forks workers of one thread
    assert not workers.forks_workers("cpu", 2) and not workers.forks_workers("meta", 1)
    monkeypatch.setattr(workers, "forks_workers", lambda device, threads: processes)
    tmp, out = run
    lines = [" ".join("abcdefghij"[i : i + 2 + i % 5]) for i in range(9)]
    model = load_model(out)
    for beam in (1, 4):
        small = {"beam": beam, "max_tokens": 6 * beam}  # batches of a few lines
        assert model.translate(lines, workers=2, **small) == model.translate(lines, **small)
    assert model.translate("a b c d", beam=4, workers=2) == "d c b a"


def test_a_pool_s_worker_with_kept_workers_exits(run):
    """A process of multiprocessing's (a pool's worker, as bench/inference.py runs each
    pass) whose model and kept forked workers live to its end exits: the workers are
    closed before multiprocessing joins its children, which waited on them for good."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    from runtime_helpers import translate_with_kept_workers

    tmp, out = run
    pool = ProcessPoolExecutor(1, mp_context=get_context("spawn"))
    procs = []
    try:
        found = pool.submit(translate_with_kept_workers, str(out)).result(timeout=300)
        assert found == "d c b a"
        procs = list(pool._processes.values())
        pool.shutdown(wait=False)
        # asked again until a deadline, not by one join: join returns once the process has
        # closed its end of the sentinel pipe, which it does in the kernel's exit a moment
        # before waitpid sees it gone (and the pool's own thread reaps it too)
        deadline = time.monotonic() + 60
        while any(p.is_alive() for p in procs) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert procs and not any(p.is_alive() for p in procs)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()


def test_translate_with_workers_on_the_command_line(run, monkeypatch):
    """adl translate --workers 2: the same lines, the model loaded on one thread (no idle
    OpenMP team of the loading thread), torch's threads as they were after."""
    import torch

    tmp, out = run
    stdin = "a b c d\nq r s\nf g h i j\n"
    threads = torch.get_num_threads()
    one = translate(
        monkeypatch, "--model", str(out), "--beam", "4", "--max-tokens", "8", stdin=stdin
    )
    two = translate(
        monkeypatch,
        "--model",
        str(out),
        "--beam",
        "4",
        "--max-tokens",
        "8",
        "--workers",
        "2",
        stdin=stdin,
    )
    assert one[0] == two[0] == 0, two[2]
    assert two[1] == one[1] and two[1].split("\n")[0] == "d c b a"
    assert torch.get_num_threads() == threads


def test_a_model_for_workers_loads_on_one_thread():
    import torch

    from adl.runtime.decode.driver import loading_for

    threads = torch.get_num_threads()
    with loading_for(1):
        assert torch.get_num_threads() == threads  # one worker: nothing changes
    with loading_for(2):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == threads
