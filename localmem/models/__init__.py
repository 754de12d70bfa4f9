"""The model roles (LLM, embedder, reranker) as Protocols, the factory that builds them from the
config, structured calls, the model catalog and the backends."""
