"""What only speed needs, behind the plain model's interfaces, installed by replacing modules:
for translating, by :func:`attenzione.model.fast.precision.for_inference` at load (the
attention kernels and stacked Q/K/V, ``attention``; the K/V cache with reused buffers and beams
grouped over one copy of the memory, ``cache`` and ``layers``; packed fp32 linear layers,
``packing``; bf16 and int8, ``precision``); for training, by
:func:`attenzione.model.fast.attention.for_training` (the fused kernel and the fast dropout,
``dropout``)."""
