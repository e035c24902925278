"""The machine Fusion runs on: its processes (from /proc) and its free ports."""
