"""The run room: what a user starts. A run's configuration from files, presets and settings
(``configure``), the demo (``demo``), and pictures of runs and attention (``viz``,
``figures``). It imports every room below it (data, model, decode, training); only the
sweeps (:mod:`adl.runtime.sweep`) and the CLI sit above it."""
