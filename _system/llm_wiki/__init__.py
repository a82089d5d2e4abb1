"""llm-wiki: a compounding memory for people and AI agents."""

__version__ = "0.1.0"
