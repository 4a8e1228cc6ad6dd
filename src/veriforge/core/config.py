"""One typed settings tree for all of veriforge.

Every knob lives in :class:`Settings` (sections ``store``, ``llm``, ``sandbox``, ``cuda``,
``optiml``) and is read from four places; a later one wins, key by key (nested dicts are merged, not replaced):

1. defaults (the field defaults below),
2. a TOML file: the explicit ``config_file`` argument, else ``$VERIFORGE_CONFIG``, else
   ``./veriforge.toml`` if it exists,
3. environment variables ``VERIFORGE_<SECTION>__<KEY>`` (e.g. ``VERIFORGE_LLM__MODEL``; complex
   values such as ``VERIFORGE_LLM__PRICES`` are JSON),
4. ``overrides``: a nested dict built from CLI flags (``{"llm": {"model": "x"}}``).

Typos are errors, not silently ignored: an unknown key anywhere raises :class:`ConfigError`
naming it and where it came from; an invalid value names the field path.

The ``veriforge`` command builds one :class:`Settings` per invocation (``--config``/``--set``) and
makes it the *active* settings (:func:`activate`) for the whole command, so library code that falls
back to "the user's settings" (:func:`active_settings`: the run store's path, model clients, the CPU
runtime's program time limit) sees the same overrides as the command itself.
"""

from __future__ import annotations

import contextvars
import json
import math
import os
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from veriforge.core import defaults
from veriforge.errors import ConfigError

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_CONFIG_NAME",
    "ENV_PREFIX",
    "CudaSettings",
    "LLMSettings",
    "OptimlSettings",
    "Price",
    "SandboxSettings",
    "Settings",
    "StoreSettings",
    "activate",
    "active_settings",
    "find_config_file",
    "load_settings",
    "to_toml",
]

ENV_PREFIX = "VERIFORGE_"
ENV_DELIMITER = "__"
CONFIG_ENV = "VERIFORGE_CONFIG"
DEFAULT_CONFIG_NAME = "veriforge.toml"


class _Section(BaseModel):
    """Sections forbid unknown keys so a misspelt option fails loudly."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class StoreSettings(_Section):
    """Where the run store lives; ``None`` means ``<VERIFORGE_HOME>/runs.sqlite``."""

    path: Path | None = None


class Price(_Section):
    """Price of one model in currency units per million tokens, for cost accounting.

    Written in TOML either as a table ``{input = 2.5, output = 10.0}`` or a pair ``[2.5, 10.0]``.
    """

    input: float = Field(ge=0)
    output: float = Field(ge=0)

    @model_validator(mode="before")
    @classmethod
    def _from_pair(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            if len(value) != 2:
                raise ValueError("a price pair must be [input_per_mtok, output_per_mtok]")
            return {"input": value[0], "output": value[1]}
        return value

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Cost of one call with these token counts."""
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1_000_000


class LLMSettings(_Section):
    """Language-model access shared by every back-end.

    ``model`` is the one string that names a model (its forms are documented by the llm layer);
    ``api_key_env`` names the environment variable holding the key (the key itself never sits in a
    config file); ``extra`` is passed through to the provider untouched.
    """

    model: str | None = None
    cache: bool = True
    max_concurrency: int = Field(default=8, ge=1)
    max_retries: int = Field(default=5, ge=0)
    timeout_s: float = Field(default=120.0, gt=0)
    trace: bool = True
    trace_path: Path | None = None
    api_key_env: str | None = None
    prices: dict[str, Price] = Field(default_factory=dict)
    extra: dict[str, Any] = Field(default_factory=dict)

    def price_for(self, model: str) -> Price | None:
        """The configured price of ``model`` (exact name first, then the part after the last '/')."""
        if model in self.prices:
            return self.prices[model]
        return self.prices.get(model.rsplit("/", 1)[-1])


class SandboxSettings(_Section):
    """Default limits for untrusted programs (see the sandbox layer)."""

    timeout_s: float = Field(default=60.0, gt=0)
    cpu_s: int = Field(default=60, ge=1)
    memory_mb: int = Field(default=4096, ge=1)
    file_size_mb: int = Field(default=256, ge=1)
    max_procs: int = Field(default=64, ge=1)
    max_output_bytes: int = Field(default=1_000_000, ge=1)
    max_open_files: int = Field(default=256, ge=16)
    network: bool = False
    strict: bool = False
    """Refuse to run untrusted code unless every isolation layer is in force (see docs/sandbox.md)."""


_ARCH = re.compile(r"^(sm|compute)_\d{2,3}[af]?$")


class CudaSettings(_Section):
    """CUDA toolchain choices: target architecture, which nvcc, CPU-runtime threads, the default
    time limit of a whole program on the CPU runtime (``veriforge cuda run``; None: 60 s), the
    back-end candidates run on (``eval``, ``optimize``, ``generate``) and the GPU the cost model
    estimates for (``optimize``, ``cuda analyze``)."""

    arch: str = defaults.CUDA_ARCH
    backend: str = defaults.CUDA_BACKEND
    gpu: str = defaults.CUDA_GPU
    nvcc: Path | None = None
    cpu_threads: int | None = Field(default=None, ge=1)
    program_timeout_s: float | None = Field(default=None, gt=0)

    @field_validator("arch")
    @classmethod
    def _valid_arch(cls, value: str) -> str:
        if not _ARCH.match(value):
            raise ValueError(f"arch must look like sm_90, sm_90a or compute_80, got {value!r}")
        return value

    @field_validator("backend")
    @classmethod
    def _valid_backend(cls, value: str) -> str:
        if value not in ("cpu", "gpu"):
            raise ValueError(f"backend must be cpu or gpu, got {value!r}")
        return value


class OptimlSettings(_Section):
    """OptiML-X search defaults (``veriforge optimize`` and the search after ``veriforge generate``).

    ``budget`` counts evaluations (distinct kernels, the start included); the bundled demo uses
    its own smaller budget unless this one is set explicitly (see :mod:`veriforge.core.defaults`).
    """

    budget: int = Field(default=defaults.OPTIML_BUDGET, ge=1)
    algorithm: str = defaults.OPTIML_ALGORITHM
    seed: int = defaults.OPTIML_SEED

    @field_validator("algorithm")
    @classmethod
    def _valid_algorithm(cls, value: str) -> str:
        if value not in ("mcts", "random", "greedy"):
            raise ValueError(f"algorithm must be mcts, random or greedy, got {value!r}")
        return value


# The TOML layer for the Settings being built right now (a context variable, so concurrent
# load_settings calls in threads or tasks cannot see each other's file).
_FILE_LAYER: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "veriforge_file_layer", default=None)


class _FileSource(PydanticBaseSettingsSource):
    """Feeds the already-parsed TOML dict to pydantic-settings as the lowest-priority source."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        data = _FILE_LAYER.get() or {}
        return data.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(_FILE_LAYER.get() or {})


class Settings(BaseSettings):
    """The whole configuration. Build it with :func:`load_settings`; ``Settings()`` alone reads
    only defaults and the environment."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter=ENV_DELIMITER,
        extra="forbid",
        validate_assignment=True,
    )

    store: StoreSettings = Field(default_factory=StoreSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    cuda: CudaSettings = Field(default_factory=CudaSettings)
    optiml: OptimlSettings = Field(default_factory=OptimlSettings)

    _config_file: Path | None = PrivateAttr(default=None)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # First wins: overrides (init kwargs) > environment > TOML file > defaults. No .env or
        # secrets directory: configuration should come from places a user can see.
        return (init_settings, env_settings, _FileSource(settings_cls))

    @property
    def config_file(self) -> Path | None:
        """The TOML file these settings were read from, if any."""
        return self._config_file

    def dump_toml(self) -> str:
        """The effective settings as TOML (what ``veriforge config show`` prints).

        Unset optional values are written as comments, since TOML has no null; loading the output
        with :func:`load_settings` gives back equal settings.
        """
        return to_toml(self.model_dump(mode="json"))


def find_config_file(config_file: str | Path | None = None) -> Path | None:
    """The TOML file to read: explicit path, else ``$VERIFORGE_CONFIG``, else ``./veriforge.toml``.

    An explicitly named file (argument or environment) that does not exist is an error; the
    implicit ``./veriforge.toml`` is simply optional.
    """
    if config_file is not None and str(config_file) != "":
        path = Path(config_file).expanduser()
        if not path.is_file():
            raise ConfigError(f"config file not found: {path}")
        return path
    env = os.environ.get(CONFIG_ENV)
    if env:
        path = Path(env).expanduser()
        if not path.is_file():
            raise ConfigError(f"config file not found: {path} (from ${CONFIG_ENV})")
        return path
    local = Path.cwd() / DEFAULT_CONFIG_NAME
    return local if local.is_file() else None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML in {path}: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc


def _unknown_keys(data: Any, model: type[BaseModel], prefix: str = "") -> list[str]:
    """Dotted paths of keys in ``data`` that ``model`` does not define (recursing into sections)."""
    if not isinstance(data, dict):
        return []
    found: list[str] = []
    for key, value in data.items():
        path = f"{prefix}{key}"
        field = model.model_fields.get(key)
        if field is None:
            found.append(path)
            continue
        sub = field.annotation
        if isinstance(sub, type) and issubclass(sub, _Section):
            found.extend(_unknown_keys(value, sub, prefix=f"{path}."))
    return found


def _env_var_for(loc: tuple[Any, ...]) -> str | None:
    """The environment variable that set the field at ``loc``, if one is set."""
    for depth in range(len(loc), 0, -1):
        name = ENV_PREFIX + ENV_DELIMITER.join(str(p) for p in loc[:depth])
        for candidate in (name, name.upper()):
            if candidate in os.environ:
                return candidate
    return None


def _has_path(data: dict[str, Any], loc: tuple[Any, ...]) -> bool:
    node: Any = data
    for part in loc:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def _origin(loc: tuple[Any, ...], overrides: dict[str, Any], file: Path | None,
            file_data: dict[str, Any]) -> str:
    """Which layer supplied the value at ``loc``, for error messages (highest priority first).

    Attribution is by ``section.key`` (the first two parts of the path), which is the granularity
    at which a user writes a flag, an environment variable or a TOML line.
    """
    head = tuple(str(p) for p in loc[:2])
    if _has_path(overrides, head):
        return "command-line overrides"
    env = _env_var_for(head)
    if env:
        return f"environment variable {env}"
    if file is not None and _has_path(file_data, head):
        return f"config file {file}"
    return "defaults"


def _format_errors(exc: ValidationError, overrides: dict[str, Any], file: Path | None,
                   file_data: dict[str, Any]) -> str:
    lines = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        path = ".".join(str(p) for p in loc)
        origin = _origin(loc, overrides, file, file_data)
        if err["type"] == "extra_forbidden":
            lines.append(f"unknown configuration key '{path}' (from {origin})")
        else:
            value = err.get("input")
            shown = "" if isinstance(value, dict) else f" (got {value!r})"
            lines.append(f"invalid value for '{path}'{shown}: {err['msg']} (from {origin})")
    return "invalid configuration:\n  " + "\n  ".join(lines)


def load_settings(config_file: str | Path | None = None,
                  overrides: dict[str, Any] | None = None) -> Settings:
    """Build :class:`Settings` from defaults < TOML file < environment < ``overrides``.

    ``overrides`` is a nested dict (``{"llm": {"model": "x"}}``); ``None`` values in it are
    dropped, so CLI flags that were not given do not mask lower layers.
    """
    path = find_config_file(config_file)
    file_data = _read_toml(path) if path is not None else {}
    unknown = _unknown_keys(file_data, Settings)
    if unknown:
        raise ConfigError(f"unknown configuration key{'s' if len(unknown) > 1 else ''} "
                          f"{', '.join(repr(k) for k in unknown)} in {path}")
    clean = _drop_none(overrides or {})
    if not isinstance(clean, dict):
        raise ConfigError("overrides must be a nested dict such as {'llm': {'model': 'x'}}")
    token = _FILE_LAYER.set(file_data)
    try:
        settings = Settings(**clean)
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc, clean, path, file_data)) from None
    finally:
        _FILE_LAYER.reset(token)
    settings._config_file = path
    return settings


# The settings of the running command (see the module docstring). A plain module global, not a
# context variable: the command's worker threads must see it too.
_ACTIVE: Settings | None = None


def activate(settings: Settings | None) -> Settings | None:
    """Make ``settings`` the ones :func:`active_settings` returns (``None``: back to loading them);
    returns the previously active settings so a caller can restore them."""
    global _ACTIVE
    previous, _ACTIVE = _ACTIVE, settings
    return previous


def active_settings() -> Settings:
    """The settings of the running ``veriforge`` command (its ``--config``/``--set`` included), else
    the user's settings from the file and the environment (:func:`load_settings`)."""
    return _ACTIVE if _ACTIVE is not None else load_settings()


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    return value


# --- a tiny TOML writer (tomllib only reads) -------------------------------------------------

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        # JSON string escapes (\", \\, \n, \uXXXX) are a subset of TOML basic-string escapes.
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_scalar(v) for v in value if v is not None) + "]"
    if isinstance(value, dict):
        items = [f"{_key(str(k))} = {_scalar(v)}" for k, v in value.items() if v is not None]
        return "{" + ", ".join(items) + "}" if items else "{}"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def to_toml(data: dict[str, Any], _path: tuple[str, ...] = ()) -> str:
    """Write a nested dict as TOML: scalars first, then one ``[table]`` per nested dict.

    ``None`` values become comments (``# key = unset``) because TOML cannot express null.
    """
    lines: list[str] = []
    tables: list[tuple[str, dict[str, Any]]] = []
    for key, value in data.items():
        if isinstance(value, dict) and value:
            tables.append((key, value))
        elif value is None:
            lines.append(f"# {_key(key)} = unset")
        else:
            lines.append(f"{_key(key)} = {_scalar(value)}")
    out = []
    if _path and (lines or not tables):
        out.append("[" + ".".join(_key(p) for p in _path) + "]")
    out.extend(lines)
    text = "\n".join(out)
    for key, value in tables:
        sub = to_toml(value, (*_path, key))
        text = f"{text}\n\n{sub}" if text else sub
    return text if _path else text.rstrip("\n") + "\n"
