"""Perception backends: faces, voices (speaker embeddings) and speech recognition."""
