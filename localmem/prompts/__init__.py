"""Prompts as modules: each has VERSION, SCHEMA (bounded), MAX_TOKENS and build(...) -> messages.

Static instructions come first in every prompt so llama.cpp reuses the evaluated
prefix across calls; the variable part (the messages) comes last.
"""
