"""Transports: the only code that talks to a server, over the network or a subprocess (contract: :mod:`.base`)."""
