"""Model backends: text embedders (``embed``) and chat models (``llm``), and where bundled weights live."""
