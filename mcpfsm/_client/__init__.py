"""The client layer: the public :class:`Client` composed of a session, era negotiation and a tool catalog."""
