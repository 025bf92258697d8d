"""The adapter: the adaptation loop as a LangGraph graph (DESIGN.md, "One adaptation round")."""
