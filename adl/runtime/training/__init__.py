"""The training room: the loop and its parts. The trainer (``train``), the loss with label
smoothing (``loss``), learning-rate schedules (``schedule``), mixed precision
(``precision``), validation (``validate``: loss, and BLEU/chrF through the decoding room),
and several processes (``distributed``, ``worker``). It imports data, model and decode."""
