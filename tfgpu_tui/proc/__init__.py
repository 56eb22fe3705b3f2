"""Process facts, in one place: starting tfgpu-tui's own children (spawn.py) and recognising them
(marks.py), and what other processes are, read through psutil and /proc (facts.py: the one source of host
process facts; device_files.py: who holds /dev/nvidia* inside a container; python_processes.py: running
Pythons and TensorFlow jobs and their interpreters; log_writers.py: where a job's output goes)."""
