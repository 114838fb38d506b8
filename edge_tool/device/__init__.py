"""A ``--device`` board, the place ``eval``, ``check`` and ``convert --quant auto`` measure on over SSH, and
``edgetool device``: ``url`` (the ssh:// form, parsed once), ``transport`` (one OpenSSH connection per board),
``session`` + ``answers`` (a runner there, spoken to in bounded, checked frames), ``board_runner`` + ``board_facts``
+ ``board_model`` + ``board_tflm`` (the program sent to the board), ``board`` (one model on a board for any runtime
with a program there), ``programs`` (LiteRT and TFLM on a board; ``check --device``'s probe), ``fleet`` + ``spread``
(several boards), ``facts`` (the device record and fixes), ``probe`` (``edgetool device``)."""
