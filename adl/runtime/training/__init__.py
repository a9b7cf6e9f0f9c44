"""The training room: the loop and its parts. The trainer (``train``: the loop, one update),
what a run starts from (``prepare``) and holds (``state``), what it keeps (``policy``: the
best, early stopping, checkpoints, averages), the optimizer (``optimizer``), the loss with
label smoothing (``loss``), the learning rate (``schedule``: it alone sets the optimizer's),
mixed precision (``precision``), validation (``validate``: loss, and BLEU/chrF through the
decoding room), and several processes (``distributed``, ``worker``). It imports data, model
and decode."""
