"""What the CLI commands run: batch question answering, batch memorization, the demo."""
