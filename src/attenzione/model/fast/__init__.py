"""What only inference speed needs, behind the plain model's interfaces, installed at load by
:func:`attenzione.model.fast.precision.for_inference`: the K/V cache with reused buffers and
beams grouped over one copy of the memory (``cache``, ``layers``), packed fp32 linear layers
(``packing``), bf16 and int8 precisions (``precision``)."""
