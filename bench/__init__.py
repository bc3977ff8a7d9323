"""Speed benchmarks (not part of the installed package): ``python -m bench --help``."""
