"""The mini M3-Bench: three short videos built from the repository's photos and espeak-ng voices, with questions
in M3-Bench's exact annotation schema, so the whole benchmark path runs on a CPU in CI."""
