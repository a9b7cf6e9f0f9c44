"""The data room: text in, batches out. Reading lines and parallel corpora (``lines``,
``corpus``), the tokenized parallel data (``parallel``; ``data`` is its name of the previous
release), the sentencepiece tokenizers and their cache (``tokenizer``,
``tokencache``), batching by tokens (``batching``) and batches made ahead in a thread
(``prefetch``), and the bundled Bible corpus (``bible``). It imports nothing of the other
rooms."""
