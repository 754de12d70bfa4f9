"""Model backends. Heavy libraries (onnxruntime, llama_cpp) are imported only here, lazily."""
