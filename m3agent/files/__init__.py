"""Files in and out, written once for every command: what a person gives, what the project writes and prints.

``jsonl`` reads every JSON-lines and JSON input (encodings, bounded lines, one error per bad line);
``private`` creates the files that hold faces, voices and words 0600 (folders 0700); ``resumable`` is the
append-only results file a re-run reads back; ``outfolder`` claims an ``--out`` folder and replaces its files at
once; ``terminal`` shows text from memory without letting it drive the terminal; ``shelf`` keeps what was opened
once (memory DBs, chat models) for every caller.

This room stands only on :mod:`m3agent.errors`; every room above it may use it.
"""
