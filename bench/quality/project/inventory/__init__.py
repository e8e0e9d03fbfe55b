"""A small inventory and ordering library: the code base the quality tasks are set in."""
