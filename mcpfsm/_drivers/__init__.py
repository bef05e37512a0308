"""Trio drivers: one effect per state of a machine, one trigger per effect, one event per state entered."""
