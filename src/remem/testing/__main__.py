"""``python -m remem.testing``: serve the loopback chat APIs on a fixed port (see
:func:`remem.testing.chat_server.main`)."""

from remem.testing.chat_server import main

main()
