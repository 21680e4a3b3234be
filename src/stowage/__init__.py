"""stowage: resource placement and move orchestration for compute clouds."""

__version__ = "0.1.0"
