"""What only inference speed needs, behind the plain model's interfaces: packed fp32 linear
layers, bf16 and int8 precisions."""
