"""m3agent: long-term multimodal memory for agents that watch long videos.

Importing the package is cheap: models, faiss and torch load only when a backend is built.
"""

__version__ = "0.1.0"
