"""Short-term memory: threads, their history, trimming and running summaries."""
