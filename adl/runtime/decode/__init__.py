"""The decoding room: from a trained model to translations and scores. Greedy and beam
search over the layers' incremental caches (``search``; its options are
:mod:`adl.runtime.search_options`), the one door to a trained model,
:class:`~adl.runtime.decode.translator.Translator` (translate, n-best, stream, score,
attention), ensembles (``ensemble``), forced-decoding scores and contrastive sets
(``forced``), BLEU and chrF with sacrebleu (``bleu``) and the CTranslate2 backend
(``ct2_translator``). It imports the data and model rooms, never training. (``inference``
is ``bleu``'s name of the previous release.)"""
