"""The model room: a configuration's model and what is kept of it. Building the PyTorch model
of a run's configuration (``build``), checkpoints with their tokenizers and the loading for
inference (``checkpoint``), averaged checkpoints (``averaging``), the pickle-free export
folder (``export``) and its CTranslate2 conversion (``ct2_convert``). It imports the data room (tokenizers), not decoding or training."""
