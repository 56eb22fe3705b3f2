"""Is my environment right? Driver, TensorFlow build, CUDA libraries -> findings with fixes."""
