"""attenzione: English→Italian translation on a Transformer written from first principles.

The package shows its attention, too: see :mod:`attenzione.viz` and ``attenzione attention``.
"""

__version__ = "0.1.0"
