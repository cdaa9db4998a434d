"""The sample episode the project ships (photos in ``m3agent/assets/faces``, espeak-ng voices) and the
renderer that builds such episodes; the demo, the tests and the benchmarks use them."""
