"""tfgpu-tui: a terminal dashboard for training TensorFlow models on an NVIDIA GPU."""

__version__ = "0.1.0"
