"""This host's Prometheus exporter: the feed's snapshots and followed training logs as metric families
(dcgm-exporter names plus ``tfgpu_`` series), served over HTTP(S) by ``tfgpu-tui export``."""
