"""The adapter: the adaptation loop as a LangGraph graph (docs/ARCHITECTURE.md, "One round's data path")."""
