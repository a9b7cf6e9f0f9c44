"""The decoding options: one name and one default each, whatever the door (the command line,
the Python API, the CTranslate2 backend, a sweep spec, the training's validation)."""

import dataclasses
import warnings

import pytest
from conftest import run_cli

from adl.cli import parser
from adl.runtime.config import TrainConfig
from adl.runtime.decode.ct2_translator import Ct2Translator
from adl.runtime.decode.hypotheses import Hypothesis
from adl.runtime.decode.translator import Translator
from adl.runtime.errors import ConfigError
from adl.runtime.search_options import DEFAULTS, RENAMED, SearchOptions

FIELDS = [f.name for f in dataclasses.fields(SearchOptions)]
OTHER = {  # a value other than the default, for each option
    "beam": 3,
    "nbest": 2,
    "penalty": "gnmt",
    "alpha": 0.6,
    "len_a": 1.2,
    "len_b": 4,
    "max_tokens": 100,
    "workers": 2,
}


def test_every_option_is_known_to_the_test():
    assert sorted(OTHER) == sorted(FIELDS)


def _flags(command: str) -> dict[str, object]:
    """The options of ``adl COMMAND``: flag -> its default."""
    sub = next(a for a in parser()._actions if a.dest == "command")
    found = {}
    for action in sub.choices[command]._actions:
        for flag in action.option_strings:
            found[flag] = action.default
    return found


@pytest.mark.parametrize("command", ["translate", "eval"])
def test_the_command_line_flag_is_the_name_with_dashes_and_its_default(command):
    flags = _flags(command)
    for name in FIELDS:
        if name == "nbest" and command == "eval":
            continue  # eval scores the best translation
        flag = "--" + name.replace("_", "-")
        assert flag in flags, flag
        assert flags[flag] == getattr(DEFAULTS, name), flag
    args = parser().parse_args(
        [command, "--model", "run", "--ref", "r"][: 5 if command == "eval" else 3]
    )
    assert {n: getattr(args, n) for n in FIELDS if hasattr(args, n)} == {
        n: getattr(DEFAULTS, n) for n in FIELDS if n != "nbest" or command == "translate"
    }


def test_translate_help_shows_the_default_beam():
    code, out, _ = run_cli("translate", "--help")
    assert code == 0
    line = next(line for line in out.splitlines() if line.strip().startswith("--beam"))
    assert f"(default {DEFAULTS.beam})" in line


class _Seen:
    """A stand-in for a model behind ``search``: it records the options it is given."""

    def __init__(self):
        self.options = None

    def search(self, lines, options, warn=None, numbers=None):
        self.options = options
        return [[("x", Hypothesis([], 0.0, 0.0))] * options.nbest for _ in lines]


@pytest.mark.parametrize("door", [Translator.translate, Ct2Translator.translate])
def test_the_python_doors_take_the_same_names_and_defaults(door):
    seen = _Seen()
    door(seen, ["a b"])
    assert seen.options == DEFAULTS
    for name, value in OTHER.items():
        door(seen, ["a b"], **({"beam": 3} if name == "nbest" else {}), **{name: value})
        assert getattr(seen.options, name) == value, name
    door(seen, "a b", SearchOptions(beam=2), nbest=2)  # options, and names over them
    assert (seen.options.beam, seen.options.nbest) == (2, 2)
    with pytest.raises(TypeError, match="unknown search option 'beam_size'"):
        door(seen, "a b", beam_size=2)


def test_the_validation_of_training_reads_the_same_options_and_defaults():
    config = TrainConfig()
    named = [n for n in FIELDS if hasattr(config, f"decode_{n}")]
    assert named == ["len_a", "len_b"]
    for name in named:
        assert getattr(config, f"decode_{name}") == getattr(DEFAULTS, name)


def test_a_sweep_specs_decode_keys_are_the_same_names():
    from adl.runtime.sweep.spec import SEARCH_KEYS

    assert set(SEARCH_KEYS) == set(FIELDS) - {"nbest"}


def test_options_out_of_range_cannot_be_made():
    for settings, words in (
        ({"beam": 0}, "beam size must be at least 1"),
        ({"nbest": 6}, "nbest must be between 1 and the beam size (5)"),
        ({"max_tokens": 0}, "batch size must be at least 1 token"),
        ({"workers": 0}, "workers must be at least 1"),
        ({"penalty": "average"}, "unknown length penalty 'average'"),
        ({"len_a": float("nan")}, "len_a must be a finite number >= 0"),
        ({"len_a": 0.0, "len_b": 0}, "every translation would be empty"),
    ):
        with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
            SearchOptions(**settings)


def test_the_previous_releases_names_still_work_one_release():
    for old, new in RENAMED.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            options = SearchOptions.of(**{old: OTHER[new]})
        assert getattr(options, new) == OTHER[new]
        assert [w.category for w in caught] == [DeprecationWarning]
        assert f"renamed {new}" in str(caught[0].message)
    flags = ["--length-penalty", "gnmt", "--max-len-a", "1.2", "--max-len-b", "4"]
    args = parser().parse_args(["translate", "--model", "run", *flags, "--batch-size", "100"])
    assert (args.penalty, args.len_a, args.len_b, args.max_tokens) == ("gnmt", 1.2, 4, 100)
    code, _, err = run_cli("translate", "--model", "nowhere", "--max-len-a", "-1")
    assert code == 2 and "--max-len-a is renamed --len-a" in err and "len_a must be" in err


@pytest.mark.parametrize("beam", [1, 4])
def test_max_tokens_means_source_tokens_times_beam_in_the_ctranslate2_backend(beam):
    """ADL's search fills a batch up to ``max_tokens`` source tokens x beam; CTranslate2
    counts a batch's source tokens alone, so it is given ``max_tokens / beam``: both engines
    batch the same sentences (the 4x larger batches CTranslate2 once got at beam 4 made
    bench/inference.py's comparison unequal)."""
    calls = []

    class Engine:
        def translate_batch(self, pieces, **settings):
            calls.append(settings)
            return []

    t = Ct2Translator.__new__(Ct2Translator)
    t.engines = {1: Engine()}
    t._batch([["a", "b"]], SearchOptions(beam=beam, max_tokens=4096), limit=10)
    assert calls[0]["batch_type"] == "tokens"
    assert calls[0]["max_batch_size"] == 4096 // beam


def test_workers_are_ctranslate2s_translators_sharing_the_threads():
    """``workers`` N is CTranslate2's ``inter_threads`` N, each translator with threads / N
    of the threads (as ADL's own workers share torch's), one engine made per N."""
    made = []

    class Translator:
        def __init__(self, path, **settings):
            made.append(settings)

        def translate_batch(self, pieces, **settings):
            return []

    t = Ct2Translator.__new__(Ct2Translator)
    t.ct2 = type("ct2", (), {"Translator": Translator})
    t.model_dir, t.kind, t.index, t.compute_type, t.threads = "m", "cpu", 0, "default", 2
    t.engines = {}
    for workers in (1, 2, 2):
        t._batch([["a"]], SearchOptions(beam=1, workers=workers), limit=5)
    assert [(m["inter_threads"], m["intra_threads"]) for m in made] == [(1, 2), (2, 1)]
    t.threads, t.engines = 0, {}  # 0: CTranslate2's own default of intra threads
    t._batch([["a"]], SearchOptions(beam=1, workers=2), limit=5)
    assert (made[-1]["inter_threads"], made[-1]["intra_threads"]) == (2, 0)
