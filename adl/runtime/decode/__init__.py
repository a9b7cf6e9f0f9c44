"""The decoding room: from a trained model to translations and scores. Greedy and beam
search over the layers' incremental caches (``search``), the one door to a trained model,
:class:`~adl.runtime.decode.translator.Translator` (translate, n-best, stream, score,
attention), ensembles (``ensemble``), forced-decoding scores and contrastive sets
(``scoring``), sacrebleu scoring (``inference``) and the CTranslate2 backend (``ct2``). It
imports the data and model rooms, never training."""
