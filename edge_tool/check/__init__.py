"""``edgetool check``: will this model run on a target? One module per target under ``targets/``, registered in
``registry``; each asks the target's own library (interpreter, analyzer, op table) wherever one exists."""
