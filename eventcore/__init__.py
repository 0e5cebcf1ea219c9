"""The pure domain of jobledger: values in, values out.

Nothing in this package touches files, SQLite, threads, the clock or
randomness; time and ids are arguments, and functions return what to write
instead of writing it.  Only the standard library and attrs are imported.
"""
