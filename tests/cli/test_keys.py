"""`remem keys`: create, list and revoke API keys (admin keys too) in the database a server
uses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.cli import cli
from remem.errors import InvalidInputError
from remem.server.keys import KeyStore
from remem.store import open_store


def run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), prog_name="remem", catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_create_list_revoke_with_db_before_or_after_the_subcommand(tmp_path: Path) -> None:
    db = str(tmp_path / "keys.db")
    created = json.loads(run("keys", "create", "--db", db, "--tenant", "acme", "--json"))
    other = json.loads(run("keys", "--db", db, "create", "--tenant", "beta", "--read-only",
                           "--json"))
    listed = [json.loads(line) for line in run("keys", "list", "--db", db, "--json").splitlines()]
    assert {(k["key_id"], k["tenant"], k["read_only"]) for k in listed} == {
        (created["key_id"], "acme", False), (other["key_id"], "beta", True)}

    store = open_store(db)
    try:
        keys = KeyStore(store)
        verified = keys.verify(created["api_key"])
        assert verified is not None and verified.tenant == "acme"
        run("keys", "revoke", created["key_id"], "--db", db)
        assert keys.list(tenant="acme") == []
        assert [k.key_id for k in keys.list(tenant="acme", include_revoked=True)] == [
            created["key_id"]]
    finally:
        store.close()


def test_keys_without_the_server_extra_names_the_install_command(tmp_path: Path) -> None:
    """Before: 'unexpected ModuleNotFoundError ... (please report this)'."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['fastapi'] = None; sys.modules['mcp'] = None; "
            "from remem.cli import main; sys.argv = ['remem', 'keys', '--db', sys.argv[1], "
            "'create', '--tenant', 'acme']; main()")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "k.db")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 1, done.stderr
    assert "pip install 'remem[server]'" in done.stderr
    assert "please report" not in done.stderr


def test_admin_keys_are_created_listed_with_their_role_and_revoked(tmp_path: Path) -> None:
    db = str(tmp_path / "keys.db")
    admin = json.loads(run("keys", "create", "--db", db, "--tenant", "ops", "--admin",
                           "--name", "on-call", "--json"))
    plain = json.loads(run("keys", "create", "--db", db, "--tenant", "acme", "--json"))
    assert (admin["admin"], plain["admin"]) == (True, False)
    rows = {line.split()[0]: line.split() for line in run("keys", "list", "--db", db)
            .splitlines()}
    assert rows[admin["key_id"]][1:3] == ["ops", "admin"]
    assert rows[plain["key_id"]][1:3] == ["acme", "tenant"]

    store = open_store(db)
    try:
        keys = KeyStore(store, cache_seconds=0)
        verified = keys.verify(admin["api_key"])
        assert verified is not None and verified.admin and verified.tenant == "ops"
        run("keys", "revoke", admin["key_id"], "--db", db)
        assert keys.verify(admin["api_key"]) is None
        listed = run("keys", "list", "--db", db, "--all", "--json").splitlines()
        revoked = next(json.loads(line) for line in listed
                       if json.loads(line)["key_id"] == admin["key_id"])
        assert revoked["admin"] is True and revoked["active"] is False  # revoking kept the role
    finally:
        store.close()


def test_keys_stored_before_admin_keys_read_as_ordinary_keys(tmp_path: Path) -> None:
    from remem.server.keys import KEYS_NAMESPACE, known_tenants

    store = open_store(str(tmp_path / "old.db"))
    try:
        keys = KeyStore(store)
        token, info = keys.create("acme")
        stored = store.get(KEYS_NAMESPACE, info.key_id)
        assert stored is not None and "admin" not in stored.value  # the old shape, unchanged
        verified = keys.verify(token)
        assert verified is not None and not verified.admin and verified.role == "tenant"
        store.put(("tenants", "beta", "memories"), "m", {"text": "x"})
        assert known_tenants(store, keys) == ["acme", "beta"]
        with pytest.raises(InvalidInputError, match="admin must be true or false"):
            keys.create("acme", admin="yes")  # type: ignore[arg-type]
    finally:
        store.close()
