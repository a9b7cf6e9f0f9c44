"""Run ``sockeye.translate`` (Sockeye 3.1.34) with the benchmark's length rule and a chosen
parameter file, outside Sockeye's arithmetic:

- every translation is at most ``len_a`` x source pieces + ``len_b`` pieces, per sentence,
  as ADL's search and fairseq's ``--max-len-a/--max-len-b`` limit theirs (Sockeye's own
  limit is a factor of the training data's length ratio, without the ``+ b``);
- ``--peer-params FILE`` loads that parameter file (a checkpoint or a ``sockeye-average``
  output) into the model of ``--models DIR``, instead of ``DIR/params.best``;
- ``--peer-max-seq-len S:T`` builds the model for S source and T target positions (at
  least those it trained with), so that every input is translated whole, as ADL and
  fairseq translate theirs. Sockeye translates at most the positions it trained for and
  splits a longer input (inference.py, ``get_max_input_output_length``), and its training
  needs a word batch at least as long as its longest bucket (data_io.py
  ``define_bucket_batch_sizes``): training for the inputs' positions would force a larger
  batch. Its positional embeddings are fixed sinusoids (``--positional-embedding-type``
  default fixed, layers.py ``PositionalEmbeddings``), computed for any length: the longer
  model's first rows equal the trained ones, which is checked before they are replaced.

    python sockeye_translate.py --peer-len-a A --peer-len-b B [--peer-params FILE]
                                [--peer-max-seq-len S:T] [sockeye-translate options]

Imports nothing from ADL.
"""

import sys

from peerclock import take


def main() -> None:
    args = sys.argv[1:]
    len_a, len_b = float(take(args, "--peer-len-a")), int(take(args, "--peer-len-b"))
    params = take(args, "--peer-params") if "--peer-params" in args else None
    lengths = take(args, "--peer-max-seq-len") if "--peer-max-seq-len" in args else None
    sys.argv = [sys.argv[0], *args]

    from sockeye import inference, model, translate

    if lengths is not None:
        longer(model, *(int(n) for n in lengths.split(":")))

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


POSITIONS = ("encoder.pos_embedding.weight", "decoder.pos_embedding.weight")


def longer(model, source: int, target: int) -> None:
    """Sockeye's models built for ``source`` and ``target`` positions (eos and bos
    included, as its configs count them), at least what they trained with; their trained
    parameters loaded into them, the fixed positional embeddings being the longer model's."""
    import os
    import tempfile

    import torch

    load_config = model.SockeyeModel.load_config

    def config_for_lengths(fname):
        config = load_config(fname)
        for part in (config.config_data, config.config_encoder, config.config_decoder):
            part.max_seq_len_source = max(part.max_seq_len_source, source)
            part.max_seq_len_target = max(part.max_seq_len_target, target)
        return config

    model.SockeyeModel.load_config = staticmethod(config_for_lengths)
    load = model.SockeyeModel.load_parameters

    def load_longer(self, filename, *a, **k):
        state = torch.load(filename, map_location="cpu")
        own = self.state_dict()
        for key in POSITIONS:
            if key in state and state[key].shape != own[key].shape:
                trained, rows = state[key], state[key].size(0)
                if not torch.allclose(own[key][:rows].to(trained.dtype), trained, atol=1e-6):
                    raise SystemExit(f"{key}: not fixed sinusoids; cannot lengthen the model")
                state[key] = own[key].to(trained.dtype)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "params")
            torch.save(state, path)
            return load(self, path, *a, **k)

    model.SockeyeModel.load_parameters = load_longer


if __name__ == "__main__":
    main()
