"""CLI commands (registered on import)."""
