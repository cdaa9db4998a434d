"""Benchmarks of the memory agent: M3-Bench and VideoMME-style annotations, judges, the harness, the report.

``annotations`` reads the question files, ``judge`` decides whether an answer is right, ``rewards`` turns a
judged control episode into its reward (training, the env), ``memories`` finds or builds each video's memory,
``harness`` answers and judges every question into a resumable results file, and ``report`` turns those
results into accuracy tables and a plot.
"""
