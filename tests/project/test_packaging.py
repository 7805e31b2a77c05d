"""Packaging: the license the metadata declares ships as a file, and the container files
are structurally what docs/deploy.md describes (Docker itself is not available in CI)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


def test_the_declared_license_ships_as_a_file() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "Permission is hereby granted" in text
    # hatchling puts LICEN[CS]E* into the wheel and sdist by default
    assert project.get("license-files", ["LICENSE"]) == ["LICENSE"]


def dockerfile() -> list[tuple[str, str]]:
    """(instruction, arguments) of each Dockerfile line, continuations joined."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            rows.append((word.upper(), " ".join(rest.split())))
    return rows


def test_the_dockerfile_installs_the_server_and_runs_it_unprivileged() -> None:
    rows = dockerfile()
    stages = [i for i, (word, _) in enumerate(rows) if word == "FROM"]
    assert len(stages) == 2  # build, then a runtime image without the build context
    final = rows[stages[-1]:]
    build = rows[:stages[-1]]
    assert any(word == "RUN" and "pip install" in args and '".[server,postgres]"' in args
               for word, args in build)
    assert ("EXPOSE", "8000") in final
    users = [args for word, args in final if word == "USER"]
    assert users and users[-1] not in ("root", "0")
    # nothing runs as root after the switch, and the server starts as that user
    after = final[[w for w, _ in final].index("USER"):]
    assert not any(word == "USER" and args in ("root", "0") for word, args in after)
    entry = json.loads(dict(final)["ENTRYPOINT"])
    command = json.loads(dict(final)["CMD"])
    assert entry == ["remem"] and command[:1] == ["serve"]
    assert command[command.index("--host") + 1] == "0.0.0.0"  # reachable from outside
    assert command[command.index("--port") + 1] == "8000"
    assert "--no-auth" not in command  # off loopback the server needs API keys
    assert "/healthz" in dict(final)["HEALTHCHECK"]
    copied = [args for word, args in build if word == "COPY"]
    for needed in ("pyproject.toml", "README.md", "src"):  # what hatchling builds from
        assert any(needed in args.split() or f"{needed}/" in args for args in copied), needed


def test_compose_wires_the_server_to_postgres_with_pgvector() -> None:
    yaml = pytest.importorskip("yaml")
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    db, server = compose["services"]["db"], compose["services"]["server"]
    assert db["image"].startswith("pgvector/pgvector:")
    env = db["environment"]
    dsn = server["environment"]["REMEM_DB"]
    password = "${POSTGRES_PASSWORD:-remem}"
    assert env["POSTGRES_PASSWORD"] == password
    assert dsn == (f"postgresql://{env['POSTGRES_USER']}:{password}@db:5432/"
                   f"{env['POSTGRES_DB']}")
    assert server["build"] == "."
    assert server["depends_on"]["db"]["condition"] == "service_healthy"
    assert "pg_isready" in " ".join(db["healthcheck"]["test"])
    assert "8000:8000" in server["ports"]
    command = server["command"]
    assert command[0] == "serve" and command[command.index("--host") + 1] == "0.0.0.0"
    assert any(volume.endswith(":/var/lib/postgresql/data") for volume in db["volumes"])
