"""Reading other hosts: Prometheus's HTTP API and exporters scraped directly, decoded back into per-host
snapshots for the Hosts tab."""
