"""Run ``sockeye.translate`` (Sockeye 3.1.34) with the benchmark's length rule and a chosen
parameter file, outside Sockeye's arithmetic:

- every translation is at most ``len_a`` x source pieces + ``len_b`` pieces, per sentence,
  as ADL's search and fairseq's ``--max-len-a/--max-len-b`` limit theirs (Sockeye's own
  limit is a factor of the training data's length ratio, without the ``+ b``);
- ``--peer-params FILE`` loads that parameter file (a checkpoint or a ``sockeye-average``
  output) into the model of ``--models DIR``, instead of ``DIR/params.best``.

    python sockeye_translate.py --peer-len-a A --peer-len-b B [--peer-params FILE]
                                [sockeye-translate options]

Imports nothing from ADL.
"""

import sys

from peerclock import take


def main() -> None:
    args = sys.argv[1:]
    len_a, len_b = float(take(args, "--peer-len-a")), int(take(args, "--peer-len-b"))
    params = take(args, "--peer-params") if "--peer-params" in args else None
    sys.argv = [sys.argv[0], *args]

    from sockeye import inference, model, translate

    original = inference.get_max_input_output_length

    def limits(*a, **k):
        max_input, _ = original(*a, **k)

        def max_output(input_length: int) -> int:
            # Sockeye passes the source length with eos and forces eos when a hypothesis'
            # length (eos included) reaches the value returned: len_a x pieces + len_b pieces
            # and then eos
            return int(len_a * (input_length - 1) + len_b) + 1

        return max_input, max_output

    inference.get_max_input_output_length = limits
    if params is not None:
        load = model.SockeyeModel.load_parameters

        def load_chosen(self, filename, *a, **k):
            return load(self, params, *a, **k)

        model.SockeyeModel.load_parameters = load_chosen
    translate.main()


if __name__ == "__main__":
    main()
