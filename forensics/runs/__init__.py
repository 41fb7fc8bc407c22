"""Runs: a captured inference as a directory of buffers with a manifest, and comparing two runs stage by stage."""
