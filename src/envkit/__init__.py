"""envkit: one YAML profile in; a working, proven PyTorch training environment out."""
__version__ = "0.1.0"
