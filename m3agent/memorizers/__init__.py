"""Memorizers turn one clip's perception into episodic and semantic memory lines."""
