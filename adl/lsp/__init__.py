"""The language server for ``.adl`` files (``adl lsp``) and the editor features it serves.

Diagnostics are ``adl compile --check``'s (:mod:`.checking`, through
:func:`adl.batch.check_files`); hover (:mod:`.hover`) shows the layer reference of
docs/language.md (:func:`adl.docgen.layer_section`) and the sizes where the file uses a
layer; completion (:mod:`.completion`), definitions and references (:mod:`.occurrences`),
the outline (:mod:`.symbols`) and formatting (:mod:`.formatting`, ``adl fmt`` too). Only
:mod:`.server` and :mod:`.diagnostics` import pygls and lsprotocol (the ``lsp`` extra);
nothing of the language core imports this package.
"""
