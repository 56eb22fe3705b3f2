"""Widgets shared by several tabs."""
