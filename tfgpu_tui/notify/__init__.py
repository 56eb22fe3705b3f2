"""`tfgpu-tui notify`: events from the GPU feed and the training logs, sent once each through Apprise."""
