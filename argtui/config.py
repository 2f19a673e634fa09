"""Configuration: a TOML file of named backend profiles, and where data lives.

`ARGTUI_HOME` relocates both the config file and the data directory (tests use
it for isolation). Saving writes only what changed since the file was read, into
the file as it is (its comments, order and tables argtui does not know kept, by
tomlkit), and a profile only with its settings that differ from the defaults.
Environment variables override the file (and are not saved):

* `ARGTUI_BACKEND` picks the default profile by name;
* `ARGTUI_BASE_URL` (+ `ARGTUI_MODEL`, `ARGTUI_BACKEND_KIND`, `ARGTUI_API_KEY_ENV`)
  defines a profile named `env` and makes it the default.
"""

from __future__ import annotations

import os
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import platformdirs
import tomlkit
from pydantic import BaseModel, ValidationError
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import Table

from engines.datasets.ukp_essays import DATA_ENV as UKP_ESSAYS_ENV
from engines.debate.settings import DebateSettings
from engines.errors import ArgtuiError
from engines.inspire.settings import InspireSettings
from engines.llm.embedded import EMBEDDED_MODEL_NAME
from engines.llm.profile import EMBEDDED_PROFILE, BackendProfile
from engines.output import write_text_file
from engines.retrieval.settings import RetrievalSettings

APP_NAME = "argtui"
ENV_PROFILE = "env"


class ConfigError(ArgtuiError):
    """The config file (or an override) is unusable; the message names where and why."""


@dataclass(frozen=True)
class Paths:
    config_file: Path
    data_dir: Path

    @property
    def database(self) -> Path:
        return self.data_dir / "argtui.sqlite3"

    @classmethod
    def resolve(cls) -> "Paths":
        home = os.environ.get("ARGTUI_HOME")
        if home:
            root = Path(home).expanduser()
            return cls(config_file=root / "config.toml", data_dir=root / "data")
        return cls(
            config_file=Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml",
            data_dir=Path(platformdirs.user_data_dir(APP_NAME)),
        )


def embedded_profile() -> BackendProfile:
    """The zero-config default: llama-server with SmolLM2, started by argtui itself."""
    return BackendProfile(
        name=EMBEDDED_PROFILE,
        kind="llamacpp",
        model=EMBEDDED_MODEL_NAME,
        max_concurrency=4,
        # Generous: a small shared machine can be slow, and retrying a local model doesn't help.
        timeout_s=300.0,
        embedded=True,
    )


@dataclass
class Config:
    paths: Paths
    backends: dict[str, BackendProfile] = field(default_factory=dict)
    default_backend: str | None = None
    datasets: dict[str, str] = field(default_factory=dict)
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    debate: DebateSettings = field(default_factory=DebateSettings)
    inspire: InspireSettings = field(default_factory=InspireSettings)
    # `to_toml_dict` as the file (and this session's environment) gave it: what `save` compares with.
    as_read: dict = field(default_factory=dict, repr=False)

    def profile(self, name: str | None = None) -> BackendProfile:
        """A configured profile by name; the default one when name is None."""
        name = name or self.default_backend or EMBEDDED_PROFILE
        if name == EMBEDDED_PROFILE and name not in self.backends:
            return embedded_profile()
        try:
            return self.backends[name]
        except KeyError:
            known = ", ".join(sorted(set(self.backends) | {EMBEDDED_PROFILE}))
            raise ConfigError(
                f"no backend profile named {name!r} (known: {known}); "
                f"add [backends.{name}] to {self.paths.config_file}"
            ) from None

    def profile_names(self) -> list[str]:
        names = list(self.backends)
        if EMBEDDED_PROFILE not in names:
            names.append(EMBEDDED_PROFILE)
        return names

    def to_toml_dict(self) -> dict:
        """The configuration as the file's tables, each profile and table with only its settings
        that differ from the defaults."""
        data: dict = {}
        if self.default_backend:
            data["default_backend"] = self.default_backend
        backends = {
            name: profile.model_dump(exclude={"name", "embedded"}, exclude_defaults=True)
            for name, profile in self.backends.items()
            if name != ENV_PROFILE
        }
        if backends:
            data["backends"] = backends
        if self.datasets:
            data["datasets"] = dict(self.datasets)
        for name, settings in (("retrieval", self.retrieval), ("debate", self.debate), ("inspire", self.inspire)):
            table = settings.model_dump(exclude_defaults=True)
            if table:
                data[name] = table
        return data

    def save(self) -> None:
        """Write what changed since the file was read into the file as it is now, and nothing else,
        all at once (`write_text_file`: never through a link, never half-written)."""
        file = self.paths.config_file
        text = _read_text(file)
        try:
            document = tomlkit.parse(text or "")
        except TOMLKitError as exc:
            raise ConfigError(f"{file}: invalid TOML: {exc}") from None
        wanted = self.to_toml_dict()
        _update(document, self.as_read, wanted)
        write_text_file(file, tomlkit.dumps(document).rstrip("\n") + "\n", make_parents=True)
        self.as_read = wanted

    def add_backend(self, profile: BackendProfile, make_default: bool = False) -> None:
        if profile.name == ENV_PROFILE:
            raise ConfigError(
                f"the profile name {ENV_PROFILE!r} is the ARGTUI_BASE_URL one and is never saved; choose another"
            )
        self.backends[profile.name] = profile
        if make_default:
            self.default_backend = profile.name
        self.save()


def load_config(paths: Paths | None = None) -> Config:
    paths = paths or Paths.resolve()
    file = paths.config_file
    raw = _read_toml(file)
    config = Config(paths=paths)
    for name, table in _table(file, raw, "backends", "a table of profiles, [backends.NAME]").items():
        if not isinstance(table, dict):
            raise ConfigError(f"{file}: backends.{name}: expected a table [backends.{name}], got {_toml_type(table)}")
        if "name" in table:  # BackendProfile's own field: the key would clash with the table's name
            raise ConfigError(f"{file}: [backends.{name}]: name: not a setting; a profile is named by its table")
        try:
            config.backends[name] = BackendProfile(name=name, **table)
        except ValidationError as exc:
            raise ConfigError(f"{file}: [backends.{name}]: {_problems(exc)}") from None
    default_backend = raw.get("default_backend")
    if default_backend is not None and not isinstance(default_backend, str):
        raise ConfigError(
            f"{file}: default_backend: expected a string (a profile name), got {_toml_type(default_backend)}"
        )
    config.default_backend = default_backend
    for dataset, folder in _table(file, raw, "datasets", 'a table of folders, NAME = "PATH"').items():
        if not isinstance(folder, str):
            raise ConfigError(f"{file}: [datasets]: {dataset}: expected a string (a folder), got {_toml_type(folder)}")
        config.datasets[dataset] = folder
    config.retrieval = _settings(file, "retrieval", RetrievalSettings, raw)
    config.debate = _settings(file, "debate", DebateSettings, raw)
    config.inspire = _settings(file, "inspire", InspireSettings, raw)
    _apply_environment(config)
    if config.default_backend and config.default_backend != EMBEDDED_PROFILE:
        config.profile(config.default_backend)  # fail early on a dangling default
    config.as_read = config.to_toml_dict()
    return config


def _update(table, before: dict, after: dict) -> None:
    """Make the tomlkit `table` say `after` where it said `before`: only the keys whose values
    differ are set or removed (a table key by key), so every other line keeps its place and comments."""
    for key in [*before, *(key for key in after if key not in before)]:
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict) and isinstance(table.get(key), dict):
            _update(table[key], old, new)
            if not table[key]:  # a table left with no key goes with its header
                del table[key]
        elif new is None:
            table.pop(key, None)
        else:
            item = tomlkit.item(new)
            if isinstance(item, Table):
                item.add(tomlkit.nl())  # a blank line before the table that follows it
            table[key] = item


def _read_toml(file: Path) -> dict:
    """The config file's TOML; no file reads as an empty one."""
    text = _read_text(file)
    if text is None:
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: invalid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{file}: invalid TOML: arrays or tables nested too deeply") from None


def _read_text(file: Path) -> str | None:
    """The config file's text; None when there is no file."""
    try:
        kind = file.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):  # the data directory's check names a home that is a file
        return None
    except OSError as exc:
        raise ConfigError(f"{file}: cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(kind):  # reading a FIFO or a device would wait or never end
        what = "a folder" if stat.S_ISDIR(kind) else "not a regular file"
        raise ConfigError(f"{file}: is {what}; the config must be a TOML file")
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{file}: cannot be read ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{file}, line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x}); save it as UTF-8"
        ) from None


def _table(file: Path, raw: dict, name: str, expected: str) -> dict:
    """The top-level table `name` of the file ({} when absent); anything else is an error naming it."""
    table = raw.get(name, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{file}: {name}: expected {expected}, got {_toml_type(table)}")
    return table


def _toml_type(value: object) -> str:
    """What a TOML value is, in TOML's words."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, list):
        return f"an array of {len(value)} values"
    if isinstance(value, dict):
        return "a table"
    return f"the date/time {value}"


SettingsT = TypeVar("SettingsT", bound=BaseModel)


def _settings(file: Path, name: str, model: type[SettingsT], raw: dict) -> SettingsT:
    """The `[name]` table of the file as `model`; a missing table gives the defaults."""
    table = _table(file, raw, name, f"a table [{name}]")
    try:
        return model(**table)
    except ValidationError as exc:
        raise ConfigError(f"{file}: [{name}]: {_problems(exc)}") from None


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        ": ".join(part for part in (".".join(str(p) for p in err["loc"]), err["msg"]) if part) for err in exc.errors()
    )


DATASET_ENV = {"ukp-essays": UKP_ESSAYS_ENV}


def _apply_environment(config: Config) -> None:
    base_url = os.environ.get("ARGTUI_BASE_URL")
    if base_url:
        try:
            config.backends[ENV_PROFILE] = BackendProfile(
                name=ENV_PROFILE,
                kind=os.environ.get("ARGTUI_BACKEND_KIND") or None,  # type: ignore[arg-type]
                base_urls=[base_url],
                model=os.environ.get("ARGTUI_MODEL", ""),
                api_key_env=os.environ.get("ARGTUI_API_KEY_ENV") or None,
            )
        except ValidationError as exc:
            raise ConfigError(f"the ARGTUI_* environment variables: {_problems(exc)}") from None
        config.default_backend = ENV_PROFILE
    chosen = os.environ.get("ARGTUI_BACKEND")
    if chosen:
        config.default_backend = chosen
    for dataset, variable in DATASET_ENV.items():  # for one session, over the [datasets] table
        if os.environ.get(variable):
            config.datasets[dataset] = os.environ[variable]
