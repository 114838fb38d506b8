"""The plumbing floor: child processes, TensorFlow's process settings, the file-system rules (atomic outputs,
paths kept inside their directory, temp names a killed run cannot leave behind), signals, standard streams, the
step wrapper and the one escaping rule for user text. Imports nothing of edgetool but ``errors``."""
