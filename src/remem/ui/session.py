"""Inspector sessions: a signed cookie, and the CSRF token derived from it (pure code).

A session is a small JSON value (:class:`Session`) signed with HMAC-SHA256 under the
server's secret, so the cookie can be read but not forged or altered. It names the tenant
and the API key it was opened with (never the key's secret); every request re-checks that
the key is still active, so revoking a key ends its sessions. A session with no tenant is
anonymous: it exists only so the login form has a CSRF token. A session of an admin key may
also name the tenant it is viewing (``viewing``); the inspector honours it only while the
key is an admin key, so even a validly signed ``viewing`` gives an ordinary key nothing.

The CSRF token is a second HMAC, of the session's random id, so it is tied to one session
(a synchronizer token without server-side storage) and compared in constant time.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["COOKIE_NAME", "SESSION_SECONDS", "Session", "SessionCodec"]

#: the cookie holding the session
COOKIE_NAME: Final = "remem_ui"
#: how long a session lasts after login (8 hours)
SESSION_SECONDS: Final = 8 * 3600
_MAX_COOKIE: Final = 2048


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True, slots=True)
class Session:
    """One browser's session: ``sid`` (random), the ``tenant`` and ``key_id`` it logged in
    with (``None``: not logged in), whether the key is ``read_only``, when it ends
    (``expires``, epoch seconds), and the tenant an admin key chose to view (``viewing``;
    ``None``: its own)."""

    sid: str
    expires: float
    tenant: str | None = None
    key_id: str | None = None
    read_only: bool = False
    viewing: str | None = None

    @property
    def logged_in(self) -> bool:
        """Whether the session acts as a tenant."""
        return self.tenant is not None

    @classmethod
    def new(cls, now: float, *, tenant: str | None = None, key_id: str | None = None,
            read_only: bool = False) -> Session:
        """A fresh session (new random id, so a new CSRF token) lasting
        :data:`SESSION_SECONDS`."""
        return cls(secrets.token_urlsafe(16), now + SESSION_SECONDS, tenant, key_id, read_only)

    def to_json(self) -> dict[str, Any]:
        """The signed payload."""
        return {"sid": self.sid, "exp": self.expires, "tid": self.tenant, "kid": self.key_id,
                "ro": self.read_only, "vt": self.viewing}


class SessionCodec:
    """Signs and reads session cookies, and derives their CSRF tokens, under ``secret``."""

    def __init__(self, secret: bytes) -> None:
        if len(secret) < 32:
            raise ValueError("the session secret must have at least 32 bytes")
        self._secret = secret

    def _mac(self, purpose: bytes, data: bytes) -> bytes:
        return hmac.new(self._secret, purpose + b"\x00" + data, hashlib.sha256).digest()

    def dump(self, session: Session) -> str:
        """The cookie value of ``session``."""
        body = _b64(json.dumps(session.to_json(), separators=(",", ":")).encode())
        return f"{body}.{_b64(self._mac(b'session', body.encode()))}"

    def load(self, cookie: str | None, now: float) -> Session | None:
        """The session a cookie holds, or ``None`` if it is missing, forged, altered,
        malformed or expired."""
        if not cookie or len(cookie) > _MAX_COOKIE or cookie.count(".") != 1:
            return None
        body, _, mac = cookie.partition(".")
        try:
            given = _unb64(mac)
            raw = json.loads(_unb64(body))
        except (binascii.Error, ValueError):
            return None
        if not hmac.compare_digest(given, self._mac(b"session", body.encode())):
            return None
        try:
            session = Session(str(raw["sid"]), float(raw["exp"]),
                              None if raw.get("tid") is None else str(raw["tid"]),
                              None if raw.get("kid") is None else str(raw["kid"]),
                              bool(raw.get("ro", False)),
                              None if raw.get("vt") is None else str(raw["vt"]))
        except (KeyError, TypeError, ValueError):
            return None
        return session if session.expires > now else None

    def csrf_token(self, session: Session) -> str:
        """The CSRF token of ``session`` (the same for its whole life)."""
        return _b64(self._mac(b"csrf", session.sid.encode()))[:32]

    def csrf_ok(self, session: Session | None, token: str | None) -> bool:
        """Whether ``token`` is ``session``'s CSRF token (constant-time)."""
        if session is None or not token:
            return False
        return hmac.compare_digest(token.encode(), self.csrf_token(session).encode())
