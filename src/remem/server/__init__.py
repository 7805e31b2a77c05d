"""remem as a service: an HTTP API (FastAPI) and an MCP server over one store, with API keys
whose tenant confines every request (see ``docs/server.md``).

Needs the ``server`` extra (``pip install 'remem[server]'``); ``import remem`` never imports
it.
"""

from remem.server.app import create_app
from remem.server.keys import ApiKey, KeyStore
from remem.server.state import Principal, ServerConfig, ServerState

__all__ = ["ApiKey", "KeyStore", "Principal", "ServerConfig", "ServerState", "create_app"]
