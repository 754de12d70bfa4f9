"""Plain-text helpers used by every layer: times, words, names, sentences, reading input files."""
