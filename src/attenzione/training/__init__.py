"""Training: the loop, the loss, the schedule, checkpoints and presets."""
