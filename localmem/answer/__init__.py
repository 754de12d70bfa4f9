"""Answers: the fast pipeline (one search, one LLM call, citations), the checks of who a
question is about, date rules, excerpts, the agentic loop and profiles."""
