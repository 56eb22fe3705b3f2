"""How big a batch fits? A search over batch sizes, each trial in a fresh child process."""
