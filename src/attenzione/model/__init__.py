"""The network, as the paper draws it: attention, masks, positions, embeddings, the encoder and
decoder layers, the Transformer and its K/V cache. ``fast/`` holds what only speed needs."""
