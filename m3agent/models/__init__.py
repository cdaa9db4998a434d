"""Model backends: text embedders (and, later, chat LLMs)."""
