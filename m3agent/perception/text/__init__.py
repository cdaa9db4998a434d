from m3agent.perception.text.base import TextBackend, TextBox

__all__ = ["TextBackend", "TextBox"]
