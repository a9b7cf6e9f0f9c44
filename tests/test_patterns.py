"""The hard-coded heads' weight matrices against design.md §4 and hand computation."""

import math

import pytest
import torch

from adl import patterns as P


def pdf(x):
    return math.exp(-x * x / 2) / math.sqrt(2 * math.pi)


def test_normal_density_values():
    got = P.normal_pdf(torch.arange(4.0)).tolist()
    assert got == pytest.approx([0.398942, 0.241971, 0.053991, 0.004432], abs=1e-6)


def test_encoder_offset_left_length_5_row_2():
    row = P.gaussian(5, "l")[2].tolist()
    assert row == pytest.approx([0.24197, 0.39894, 0.24197, 0.05399, 0.00443], abs=1e-5)


def test_gaussian_is_raw_density_cut_at_the_borders_not_renormalised():
    w = P.gaussian(4, "r")
    for i in range(4):
        for j in range(4):
            assert w[i, j].item() == pytest.approx(pdf(j - i - 1), abs=1e-6)
    assert w[3].sum().item() < 0.5  # offset +1 at the last position: the peak falls outside


def test_decoder_zeroes_later_positions():
    w = P.gaussian(5, "c", causal=True)
    assert torch.all(torch.triu(w, 1) == 0)
    assert w[2, 2].item() == pytest.approx(pdf(0), abs=1e-6)
    assert w[2, 1].item() == pytest.approx(pdf(1), abs=1e-6)


def test_window_3_kernel_and_index():
    w = P.gaussian(7, "c", window=3)
    assert w[3, 2:5].tolist() == pytest.approx([0.242, 0.399, 0.242], abs=1e-3)
    assert w[3, :2].sum() == 0 and w[3, 5:].sum() == 0
    idx = P.gaussian(5, "l", index=True)
    assert torch.equal(idx, torch.diag(torch.ones(4), -1))
    assert torch.equal(P.gaussian(5, 2, index=True), torch.diag(torch.ones(3), 2))


def test_cross_attention_centres_on_floor_of_ratio_times_i_plus_offset():
    w = P.gaussian_cross(3, 8, "c", ratio=1.5)
    for i in range(3):
        centre = math.floor(1.5 * i)
        assert w[i].argmax().item() == centre
        assert w[i, centre].item() == pytest.approx(pdf(0), abs=1e-6)
    w = P.gaussian_cross(3, 8, "l", ratio=2.0)
    assert [int(r.argmax()) for r in w] == [0, 1, 3]  # ⌊2i - 1⌋, clipped at the border for i=0


def test_fixed_cubic_function():
    assert P.fixed("end", 4)[0].tolist() == pytest.approx([0.01, 0.08, 0.27, 0.64])
    assert P.fixed("start", 4)[2].tolist() == pytest.approx([0.64, 0.27, 0.08, 0.01])


@pytest.mark.parametrize(
    "name,i,expected",
    [
        ("cur", 2, [0, 0, 1, 0, 0]),
        ("prev", 2, [0, 1, 0, 0, 0]),
        ("prev", 0, [0, 0, 0, 0, 0]),
        ("next", 4, [0, 0, 0, 0, 0]),
        ("next", 1, [0, 0, 1, 0, 0]),
        ("left", 4, [1 / 36, 8 / 36, 27 / 36, 0, 0]),  # f over 0..i-2
        ("left", 1, [0, 0, 0, 0, 0]),
        ("right", 0, [0, 0, 1 / 36, 8 / 36, 27 / 36]),  # f over i+2..n-1
        ("right", 3, [0, 0, 0, 0, 0]),
        ("last", 1, [0, 0, 0, 0, 1]),
    ],
)
def test_fixed_patterns_by_hand(name, i, expected):
    assert P.fixed(name, 5)[i].tolist() == pytest.approx(expected)


def test_word_level_patterns_share_weights_within_a_word():
    words = [0, 0, 1, 2, 2, 2]  # three words of 2, 1 and 3 pieces
    w = P.fixed_words("prev", words)
    assert w[2].tolist() == pytest.approx([0.5, 0.5, 0, 0, 0, 0])  # word 1 looks at word 0
    assert torch.equal(w[3], w[5])  # pieces of one word agree
    assert w[3].tolist() == pytest.approx([0, 0, 1, 0, 0, 0])
    end = P.fixed_words("end", words)
    word_end = P.fixed("end", 3)[0]
    expected = [word_end[0] / 2] * 2 + [word_end[1]] + [word_end[2] / 3] * 3
    assert end[0].tolist() == pytest.approx([float(x) for x in expected])


def test_band_source_k3_length_5():
    rows = ["".join(str(int(v)) for v in r) for r in P.band(5, 3)]
    assert rows == ["11000", "11100", "01110", "00111", "00011"]


def test_band_even_window_takes_one_more_on_the_left():
    rows = ["".join(str(int(v)) for v in r) for r in P.band(6, 4)]
    assert rows[3] == "011110"  # i=3 sees 1, 2 (two left), 3, 4 (one right)


def test_band_decoder_previous_k_positions():
    rows = ["".join(str(int(v)) for v in r) for r in P.band(5, 3, causal=True)]
    assert rows == ["10000", "11000", "11100", "01110", "00111"]


def test_joint_band():
    m = P.joint_band(3, 3, window=3)
    rows = ["".join(str(int(v)) for v in r) for r in m]
    assert rows == [
        "110000",
        "111000",
        "011000",  # source: centred band, no target
        "111100",
        "111110",
        "111111",
    ]  # target: all source + previous 3
    full = P.joint_band(2, 2)
    assert ["".join(str(int(v)) for v in r) for r in full] == ["1100", "1100", "1110", "1111"]


def test_joint_padding_is_never_attended():
    pad = torch.tensor([[False, True, True]])
    allowed = P.joint_allowed(torch.arange(5), torch.arange(5), 3, None, pad)[0]
    assert not allowed[:, 1:3].any()
