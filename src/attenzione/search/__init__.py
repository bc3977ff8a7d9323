"""Decoding: the generation loop and its strategies, the hard constraints and ranking terms
beam search is given, the known-word lexicon, exact top-k and the vocabulary shortlist."""
