"""The model room: a configuration's model and what is kept of it. Building the PyTorch model
of a run's configuration (``build``), checkpoints with their tokenizers and the loading for
inference (``checkpoint``), averaged checkpoints (``averaging``), and the pickle-free export
folder (``export``). It imports the data room (tokenizers), not decoding or training."""
