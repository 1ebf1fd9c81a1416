"""dltui: compare deep-learning servers live in a terminal."""
