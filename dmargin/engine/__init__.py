"""The pairwise engine: tile kernels, their merges, and where they run."""
