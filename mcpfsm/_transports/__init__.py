"""Transports: the only code that touches the network or a subprocess (see :mod:`.base` for the contract)."""
