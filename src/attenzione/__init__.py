"""attenzione: an English→Italian Transformer written from first principles, with attention you can see."""

__version__ = "0.1.0"
