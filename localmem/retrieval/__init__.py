"""Search without an LLM: channels, fusion, filters, the vector index, reranking and the time a
question names."""
