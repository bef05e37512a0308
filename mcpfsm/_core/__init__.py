"""The pure protocol core: values, codecs, parsers and policies with no I/O.

Nothing under this package imports trio, httpx, loguru or anyio (``tests/client/test_layers.py`` checks it):
clocks, ids and bytes come in as arguments, and the layers above do the waiting and the logging.
"""
