"""Critique rating (seed 002): seven-dimension ratings of critiques of positions, LLM judges,
the seed's two losses, a random-judge baseline and agreement tables."""
