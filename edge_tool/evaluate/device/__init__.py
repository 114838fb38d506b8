"""On-device eval over SSH: ``url`` (the ssh:// form), ``transport`` (one OpenSSH connection per device),
``session`` (a runner there, spoken to in frames), ``board_runner`` + ``board_model`` (the program sent to the device),
``runner`` (eval's device rows), ``probe`` (``edgetool device``), ``facts`` (the device record and fixes)."""
