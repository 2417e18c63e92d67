"""The leaf of the package: errors, random streams and log-space helpers (``utils``), progress
and quiet runs, the version, the bias directions of the methods, and the result type
(``Evidence``). It imports nothing else of pm_evidence."""
