"""What the CLI commands run, with no argument parsing or printing of their own: ``memorize`` (one video), ``batch``
(many), ``qa`` (a file of questions), ``demo``, ``m3bench`` and ``m3bench_feedback`` (M3-Bench: a run assembled from
its options, answered, judged, reported), ``memorybench``."""
