"""Live GPU and process state: NVML (or a simulation), host process details, history and alert rules."""
