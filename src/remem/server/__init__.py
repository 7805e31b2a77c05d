"""remem as a service: an HTTP API (FastAPI) and an MCP server over one store, with API keys
whose tenant confines every request (see ``docs/server.md``).

Needs the ``server`` extra (``pip install 'remem[server]'``); ``import remem`` never imports
it. The names below are imported on first use (PEP 562), so ``remem mcp`` can import a light
module of this package (:mod:`remem.server.mcp_front`) without FastAPI.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from remem.server.app import create_app
    from remem.server.keys import ApiKey, KeyStore
    from remem.server.state import Principal, ServerConfig, ServerState

#: public name -> the module that defines it
_LAZY = {"ApiKey": "remem.server.keys", "KeyStore": "remem.server.keys",
         "Principal": "remem.server.state", "ServerConfig": "remem.server.state",
         "ServerState": "remem.server.state", "create_app": "remem.server.app"}

__all__ = ["ApiKey", "KeyStore", "Principal", "ServerConfig", "ServerState", "create_app"]


def __getattr__(name: str) -> Any:
    """A public name, imported when first read."""
    if name not in _LAZY:
        raise AttributeError(f"module 'remem.server' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value
