"""Data: bad files stop with one message naming the file and line; filtering is counted;
tokenizers are trained and stored; word ids follow sentencepiece's word starts."""

import pytest
import torch
from conftest import run_cli
from runtime_helpers import QUICK, model_files

from adl.runtime.config import DataConfig
from adl.runtime.data.parallel import encode_pairs, read_lines, read_parallel
from adl.runtime.data.tokenizer import EOS, PAD, Tokenizers, make_tokenizers
from adl.runtime.errors import DataError


def write(path, data: bytes):
    path.write_bytes(data)
    return str(path)


def test_different_line_counts_name_the_file_and_line(tmp_path):
    src = write(tmp_path / "t.en", b"a\nb\nc\n")
    tgt = write(tmp_path / "t.de", b"x\ny\n")
    with pytest.raises(DataError) as err:
        read_parallel(src, tgt)
    assert str(err.value) == f"{src}:3: this line has no partner: {src} has 3 lines but {tgt} has 2"


def test_an_empty_file(tmp_path):
    src = write(tmp_path / "t.en", b"a\n")
    tgt = write(tmp_path / "t.de", b"\n\n")
    with pytest.raises(DataError, match=f"^{tgt}: empty file$"):
        read_parallel(src, tgt)
    with pytest.raises(DataError, match="no such file"):
        read_parallel(src, str(tmp_path / "missing.de"))


def test_invalid_utf8_names_the_line(tmp_path):
    bad = write(tmp_path / "t.de", b"one\ntwo\nthr" + b"\xff" + b"ee\nfour\n")
    with pytest.raises(DataError) as err:
        read_lines(bad)
    assert str(err.value).startswith(f"{bad}:3: not valid UTF-8 (byte 4 of the line")


def test_empty_lines_are_skipped_and_counted_and_crlf_is_read(tmp_path):
    src = write(tmp_path / "t.en", b"a b\r\n\r\nc\nd\n")
    tgt = write(tmp_path / "t.de", b"x\r\ny\r\n\nz\n")
    pairs = read_parallel(src, tgt)
    assert (pairs.src, pairs.tgt) == (["a b", "d"], ["x", "z"])
    assert (pairs.lines, pairs.empty) == (4, 2)


def test_line_ends_are_only_newlines(tmp_path):
    # U+2028 is inside a sentence, not a line end: line counts must match `wc -l`
    f = write(tmp_path / "t.en", "a\u2028b\nc\n".encode())
    assert read_lines(f) == ["a\u2028b", "c"]


def test_length_and_ratio_filters_are_counted(tmp_path):
    src = write(tmp_path / "t.en", b"a\na b c d e f g h\na\na b\n")
    tgt = write(tmp_path / "t.de", b"a\na b c d e f g h\na b c d\na b\n")
    split = lambda lines: [l.split() for l in lines]
    ids = lambda lines: [[4 + len(w) for w in ws] for ws in split(lines)]
    data = encode_pairs(read_parallel(src, tgt), ids, ids, max_len=5, max_ratio=3.0)
    s = data.stats
    assert (s.lines, s.too_long, s.bad_ratio, s.kept) == (4, 1, 1, 2)
    assert (s.src_tokens, s.tgt_tokens) == (3, 3) and data.length_ratio == 1.0
    assert s.describe("x") == (
        "x: 4 lines, 1 of 4 pairs (25.0 %) over data.max_len=5 tokens dropped, 1 (25.0 %) "
        "over data.max_ratio=3 dropped, 2 pairs kept (3 source / 3 target tokens)"
    )
    long_ = lambda lines: [[5] * 9 for _ in lines]
    with pytest.raises(DataError, match="no sentence pair is left"):
        encode_pairs(read_parallel(src, tgt), long_, long_, max_len=5)


def test_sentencepiece_trained_joint_and_separate_and_stored(tmp_path):
    src = write(tmp_path / "t.en", ("the cat sat on the mat\n" * 50).encode())
    tgt = write(tmp_path / "t.de", ("die katze sass auf der matte\n" * 50).encode())
    joint = make_tokenizers(
        DataConfig(train_src=src, train_tgt=tgt, vocab_size=40), tmp_path / "joint"
    )
    assert joint.joint and (tmp_path / "joint" / "joint.model").is_file()
    assert joint.src_vocab == joint.tgt_vocab
    sep = make_tokenizers(
        DataConfig(train_src=src, train_tgt=tgt, vocab_size=30, joint_vocab=False), tmp_path / "sep"
    )
    assert not sep.joint and {p.name for p in (tmp_path / "sep").glob("*.model")} == {
        "src.model",
        "tgt.model",
    }
    assert sep.decode_tgt(sep.encode_tgt(["die katze"])) == ["die katze"]
    again = Tokenizers.load(tmp_path / "sep")
    assert again.encode_src(["the cat"]) == sep.encode_src(["the cat"])
    # a checkpoint carries the models' bytes
    assert Tokenizers.from_state(sep.to_state()).encode_tgt(["matte"]) == sep.encode_tgt(["matte"])


def test_a_given_model_with_other_ids_is_refused(tmp_path):
    import sentencepiece as spm

    text = write(tmp_path / "t.en", ("a b c d e f\n" * 20).encode())
    spm.SentencePieceTrainer.train(
        input=text,
        model_prefix=str(tmp_path / "m"),
        vocab_size=12,
        hard_vocab_limit=False,
        minloglevel=2,
    )  # default ids: unk 0, bos 1, eos 2, no pad
    with pytest.raises(DataError, match="the runtime needs pad=0, bos=1, eos=2, unk=3"):
        make_tokenizers(DataConfig(spm_model=str(tmp_path / "m.model")), tmp_path / "tok")


def test_word_ids_follow_word_starts(tmp_path):
    src = write(tmp_path / "t.en", ("unbelievable things happen\n" * 30).encode())
    tok = make_tokenizers(
        DataConfig(train_src=src, train_tgt=src, vocab_size=30, spm_type="char"), tmp_path / "tok"
    )
    pieces = tok.encode_src(["ab cd e"])[0]  # char pieces: ▁a b ▁c d ▁e
    src_ids = torch.tensor([pieces + [EOS, PAD]])
    words = tok.word_ids(src_ids)[0].tolist()
    starts = [tok.src.id_to_piece(p).startswith("\u2581") for p in pieces]
    expected, w = [], -1
    for s in starts:
        w += s
        expected.append(max(w, 0))
    assert words == expected + [expected[-1] + 1, 0]  # eos is a word; padding gets 0
    assert words[: len(pieces)] == [0, 0, 1, 1, 2] or len(pieces) != 5


@pytest.mark.parametrize("case", ["counts", "empty", "utf8"])
def test_bad_data_through_the_cli_is_one_message(tmp_path, case):
    files = model_files(tmp_path)
    good = b"a b\nc d\n"
    bad = {"counts": b"a b\n", "empty": b"", "utf8": b"a b\nc \xc3\x28\n"}[case]
    write(tmp_path / "train.en", good)
    write(tmp_path / "train.de", bad)
    code, out, err = run_cli(
        "train",
        *files,
        "--train",
        str(tmp_path / "train"),
        "--langs",
        "en",
        "de",
        *QUICK,
        "--out",
        str(tmp_path / "run"),
    )
    assert code == 1
    line = err.strip()
    assert "\n" not in line and "Traceback" not in err
    expected = {
        "counts": f"{tmp_path / 'train.en'}:2: this line has no partner",
        "empty": f"{tmp_path / 'train.de'}: empty file",
        "utf8": f"{tmp_path / 'train.de'}:2: not valid UTF-8",
    }[case]
    assert line.startswith(f"adl train: error: {expected}")
    assert not (tmp_path / "run" / "checkpoints").exists()
