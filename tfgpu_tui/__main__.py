"""`python -m tfgpu_tui` runs the same entry point as the `tfgpu-tui` script."""

from tfgpu_tui.cli import main

raise SystemExit(main())
