"""Beyond one machine: the core's snapshots as Prometheus series (dcgm-exporter names plus ``tfgpu_`` series),
and readers of Prometheus's HTTP API and of exporters scraped directly that yield per-host snapshots."""
