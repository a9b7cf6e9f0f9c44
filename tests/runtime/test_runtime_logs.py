"""The progress bar (on a terminal only) and the metrics log."""

import io
import json

from adl.runtime.logs import Metrics, Progress, duration


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_the_progress_bar_shows_steps_speed_loss_and_rate():
    term = Terminal()
    bar = Progress(total=100, stream=term)
    bar.update(10, tokens_per_s=12345.6, loss=2.5, lr=3e-4)
    bar.redraw()
    line = term.getvalue()
    assert "10/100" in line and "12,346 tok/s" in line
    assert "loss 2.500" in line and "lr 3.00e-04" in line
    bar.close()
    plain = io.StringIO()  # not a terminal: nothing drawn
    quiet = Progress(total=100, stream=plain)
    quiet.update(10, 1.0, 1.0, 1.0)
    quiet.redraw()
    quiet.close()
    assert plain.getvalue() == ""


def test_durations():
    assert (duration(59), duration(61), duration(3725)) == ("0:59", "1:01", "1:02:05")


def test_metrics_are_json_lines_and_a_resume_forgets_later_ones(tmp_path):
    m = Metrics(tmp_path / "metrics.jsonl")
    for step in (1, 2, 3):
        m.write({"split": "train", "step": step, "loss": 1.0 / step})
    with open(tmp_path / "metrics.jsonl", "a") as f:
        f.write('{"split": "train", "st')  # a line cut by a kill
    m.truncate_after(2)
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(l)["step"] for l in lines] == [1, 2]
