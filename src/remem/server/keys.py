"""API keys: created once, stored hashed, each bound to one tenant.

A key reads ``rk_<id>_<secret>``: ``id`` is 12 public hex characters (shown by ``remem keys
list``, used to revoke), ``secret`` 32 random bytes in URL-safe base64. Only the SHA-256 of
the whole token is stored, so a copy of the database does not reveal usable keys; a presented
key is checked by looking up its id and comparing hashes in constant time. (A plain hash is
enough: the token has 256 bits of entropy, nothing to brute-force.)

An **admin** key (``create(..., admin=True)``, ``remem keys create --admin``) still has a
home tenant, the one it acts for by default, but may also act for any other tenant: the API
honours its ``X-Remem-Tenant`` header and the inspector shows it a tenant picker. Keys
stored before admin keys existed read as non-admin.

Keys live as items of the server's own store under :data:`KEYS_NAMESPACE`. Every route works
on a :class:`~remem.store.scoped.ScopedStore` under ``("tenants", <tenant>)``, so no request
can name that namespace: it is reachable only through this module and ``remem keys``.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from remem.errors import InvalidInputError, NotFoundError
from remem.store.base import BaseStore
from remem.store.types import Namespace

__all__ = [
    "KEYS_NAMESPACE",
    "TENANT_PATTERN",
    "ApiKey",
    "KeyStore",
    "check_tenant",
    "known_tenants",
    "tenant_prefix",
]

KEYS_NAMESPACE: Final[Namespace] = ("_remem_server", "api_keys")
TENANT_PATTERN: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_TOKEN: Final = re.compile(r"^rk_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$")


def check_tenant(tenant: Any) -> str:
    """Return ``tenant`` or raise :class:`InvalidInputError` naming the rule."""
    if not isinstance(tenant, str) or not TENANT_PATTERN.match(tenant):
        raise InvalidInputError(
            f"tenant must be 1-64 letters, digits, '_', '.' or '-' starting with a letter or "
            f"digit, got {tenant!r}"
        )
    return tenant


def tenant_prefix(tenant: str) -> Namespace:
    """The namespace prefix every request of ``tenant`` is confined to."""
    return ("tenants", check_tenant(tenant))


@dataclass(frozen=True, slots=True)
class ApiKey:
    """What is known about a key (never its secret)."""

    key_id: str
    tenant: str
    read_only: bool
    name: str
    created_at: float
    revoked_at: float | None = None
    #: whether the key may act for any tenant, not only its own
    admin: bool = False

    @property
    def role(self) -> str:
        """``"admin"`` (any tenant) or ``"tenant"`` (its own tenant only)."""
        return "admin" if self.admin else "tenant"

    @property
    def active(self) -> bool:
        """Whether the key still authenticates."""
        return self.revoked_at is None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"key_id": self.key_id, "tenant": self.tenant, "read_only": self.read_only,
                "name": self.name, "created_at": self.created_at,
                "revoked_at": self.revoked_at, "active": self.active, "admin": self.admin}


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class KeyStore:
    """Create, list, revoke and verify API keys kept in ``store``.

    ``cache_seconds``: how long a verified key is remembered in this process (saves a read per
    request under load); a revocation reaches other processes within that time.
    """

    def __init__(self, store: BaseStore, *, cache_seconds: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.cache_seconds = cache_seconds
        self._clock = clock
        self._cache: dict[str, tuple[float, str, ApiKey]] = {}

    def create(self, tenant: str, *, read_only: bool = False, name: str = "",
               admin: bool = False) -> tuple[str, ApiKey]:
        """A new key for ``tenant``: ``(token, info)``. The token is shown only here.
        ``admin``: the key may also act for any other tenant (``tenant`` is its home)."""
        check_tenant(tenant)
        if not isinstance(name, str) or len(name) > 200:
            raise InvalidInputError("name must be a string of at most 200 characters")
        if not isinstance(admin, bool):
            raise InvalidInputError(f"admin must be true or false, got {admin!r}")
        key_id = secrets.token_hex(6)
        token = f"rk_{key_id}_{secrets.token_urlsafe(32)}"
        info = ApiKey(key_id, tenant, read_only, name, time.time(), admin=admin)
        self.store.put(KEYS_NAMESPACE, key_id, {**_value(info), "sha256": _digest(token)},
                       ttl=None, index=False)
        return token, info

    def list(self, *, tenant: str | None = None, include_revoked: bool = False) -> list[ApiKey]:
        """Keys, oldest first (optionally one tenant's; revoked ones when asked)."""
        found = [_info(item.key, item.value) for item in self.store.iter_items(KEYS_NAMESPACE)]
        found = [k for k in found if (tenant is None or k.tenant == tenant)
                 and (include_revoked or k.active)]
        return sorted(found, key=lambda k: (k.created_at, k.key_id))

    def revoke(self, key_id: str) -> ApiKey:
        """Revoke a key by id (:class:`NotFoundError` if there is none)."""
        if not isinstance(key_id, str) or not re.fullmatch(r"[0-9a-f]{12}", key_id):
            raise InvalidInputError(f"key id must be 12 hex characters, got {key_id!r}")
        item = self.store.get(KEYS_NAMESPACE, key_id)
        if item is None:
            raise NotFoundError(f"no API key with id {key_id!r}; see 'remem keys list'")
        value = dict(item.value)
        if value.get("revoked_at") is None:
            value["revoked_at"] = time.time()
            self.store.put(KEYS_NAMESPACE, key_id, value, ttl=None, index=False)
        self._cache.pop(key_id, None)
        return _info(key_id, value)

    def lookup(self, key_id: str) -> ApiKey | None:
        """What is stored about key ``key_id`` (revoked or not), read from the store now;
        ``None`` if there is no such key. For a process that holds a key, not its token
        (``remem mcp --api-key``), to notice a revocation."""
        item = self.store.get(KEYS_NAMESPACE, key_id, refresh_ttl=False)
        return None if item is None else _info(key_id, item.value)

    def needs_read(self, token: str) -> bool:
        """Whether :meth:`verify` would read the store for ``token`` (its key is not cached,
        or was cached too long ago); otherwise verifying it does no I/O."""
        match = _TOKEN.match(token)
        if match is None:
            return False
        cached = self._cache.get(match.group(1))
        return cached is None or self._clock() - cached[0] >= self.cache_seconds

    def verify(self, token: str) -> ApiKey | None:
        """The active key ``token`` belongs to, or ``None``."""
        match = _TOKEN.match(token)
        if match is None:
            return None
        key_id = match.group(1)
        digest = _digest(token)
        now = self._clock()
        cached = self._cache.get(key_id)
        if cached is not None and now - cached[0] < self.cache_seconds:
            _, stored_digest, info = cached
        else:
            item = self.store.get(KEYS_NAMESPACE, key_id, refresh_ttl=False)
            if item is None:
                return None
            info = _info(key_id, item.value)
            stored_digest = str(item.value.get("sha256", ""))
            self._cache[key_id] = (now, stored_digest, info)
        if not hmac.compare_digest(digest, stored_digest) or not info.active:
            return None
        return info


def known_tenants(store: BaseStore, keys: KeyStore, *, limit: int = 500) -> list[str]:
    """Tenants that have an active key or data in ``store`` (sorted, at most ``limit``): the
    choices an admin key is offered. An admin may still name any valid tenant."""
    names = {key.tenant for key in keys.list()}
    for namespace in store.list_namespaces(prefix=("tenants",), max_depth=2, limit=limit):
        if len(namespace) == 2 and TENANT_PATTERN.match(namespace[1]):
            names.add(namespace[1])
    return sorted(names)[:limit]


def _value(info: ApiKey) -> dict[str, Any]:
    value = {"tenant": info.tenant, "read_only": info.read_only, "name": info.name,
             "created_at": info.created_at, "revoked_at": info.revoked_at}
    if info.admin:  # absent on ordinary keys, as on every key stored before admin keys
        value["admin"] = True
    return value


def _info(key_id: str, value: dict[str, Any]) -> ApiKey:
    return ApiKey(key_id, str(value["tenant"]), bool(value["read_only"]), str(value["name"]),
                  float(value["created_at"]), value.get("revoked_at"),
                  value.get("admin") is True)
