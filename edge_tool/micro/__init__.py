"""Microcontrollers: TFLite Micro (TFLM) — C sources for the flatbuffer, the op resolver, a measured tensor arena.

Everything that runs TFLM's interpreter does so in a child process (``worker``): the interpreter aborts the
process (SIGSEGV) on some arena sizes and on malformed models, and that must not take edgetool down with it.
"""
