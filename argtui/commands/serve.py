"""`argtui serve --gguf FILE | --model M [vLLM flags]`: a model of your own as the backend.

`--gguf` writes a profile that argtui starts llama-server with when a command needs it;
`--model` starts a local vLLM server now and registers it under the name it serves the
model as (`--served-model-name`'s first, else the model). Flags argtui does not know go to
`vllm serve` (or to its module form, where that command cannot start) as they are (`--` may
separate them and is not passed on).

vLLM answers only the random key of its start (engines/llm/vllm_serve.py). The profile names a
key file, `<data dir>/served/NAME.key`, readable by this user only and removed when serve stops,
from which the app and other commands read the key: the key is never in the config file.
"""

from __future__ import annotations

import asyncio
import errno
import os
import signal
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import tomlkit
from pydantic import ValidationError
from rich.console import Console
from rich.text import Text

from argtui.cli import PASSTHROUGH_DEST
from argtui.config import Config, load_config
from engines.errors import ArgtuiError
from engines.llm.local_servers import with_measured_speed
from engines.llm.profile import BackendProfile
from engines.llm.servers import ManagedServer
from engines.llm.vllm_serve import cpu_build, served_model_name, start_vllm
from engines.output import write_text_file

GGUF_MAGIC = b"GGUF"  # the first bytes of every GGUF file
VLLM_DEFAULTS = {"port": None, "max_concurrency": 64, "startup_timeout": 1800.0}
GGUF_OPTIONS = ("context", "slots", "threads")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="make a GGUF file, or a local vLLM server it starts, the default backend",
        description="--gguf writes a profile argtui starts llama-server with on demand; --model starts "
                    "vLLM now. Any arguments after the known ones are passed to `vllm serve` as they are.",
        allow_abbrev=False,  # a vLLM flag that begins like one of these must still reach vLLM
    )
    model = parser.add_mutually_exclusive_group(required=True)
    model.add_argument("--gguf", type=Path, metavar="FILE", help="a GGUF model file (llama-server runs it)")
    model.add_argument("--model", help="the model vLLM serves, e.g. meta-llama/Llama-3.3-70B-Instruct")
    parser.add_argument("--name", help="profile name to write (default: gguf, or vllm-local with --model)")
    parser.add_argument("--no-default", action="store_true", help="do not make it the default backend")
    gguf = parser.add_argument_group("with --gguf")
    gguf.add_argument("--context", type=int, metavar="N", help="tokens per slot (default 4096)")
    gguf.add_argument("--slots", type=int, metavar="N", help="requests computed at once (default 4)")
    gguf.add_argument("--threads", type=int, metavar="N", help="CPU threads (default: llama-server's choice)")
    vllm = parser.add_argument_group("with --model (vLLM)")
    vllm.add_argument("--port", type=int, help="port (default: a free one)")
    vllm.add_argument("--max-concurrency", type=int, help="client-side concurrency for the profile (default 64)")
    vllm.add_argument("--startup-timeout", type=float, help="seconds to wait for /health (default 1800)")
    parser.set_defaults(handler=_serve, vllm_args=[], **{PASSTHROUGH_DEST: "vllm_args"})


def _serve(args) -> int:
    wrong = _misplaced_options(args)
    if wrong:
        raise ArgtuiError(wrong)
    if args.gguf is not None:
        return _register_gguf(args)
    for option, default in VLLM_DEFAULTS.items():
        if getattr(args, option) is None:
            setattr(args, option, default)
    return _serve_vllm(args)


def _misplaced_options(args) -> str | None:
    """What the command line sets that does not go with its kind of model, or None."""
    if args.gguf is None:
        given = [option for option in GGUF_OPTIONS if getattr(args, option) is not None]
        return f"--{given[0]} goes with --gguf, not --model" if given else None
    if args.vllm_args:
        return f"unrecognized arguments: {' '.join(args.vllm_args)} (flags for vllm serve go with --model)"
    given = [option for option in VLLM_DEFAULTS if getattr(args, option) is not None]
    return f"--{given[0].replace('_', '-')} goes with --model (vLLM), not --gguf" if given else None


def _register_gguf(args) -> int:
    """Write the GGUF file's profile; nothing starts until a command needs the model."""
    # Absolute, but links kept: a model in a download cache is a link whose target has no useful name.
    path = Path(os.path.abspath(args.gguf.expanduser()))
    problem = _gguf_problem(path)
    if problem:
        raise ArgtuiError(f"{args.gguf}: {problem}")
    config = load_config()
    try:
        profile = BackendProfile(
            name=args.name or "gguf", model_path=str(path),
            **{option: getattr(args, option) for option in GGUF_OPTIONS if getattr(args, option) is not None},
        )
    except ValidationError as exc:
        raise ArgtuiError(
            "; ".join(f"--{'.'.join(map(str, error['loc']))}: {error['msg']}" for error in exc.errors())
        ) from None
    config.add_backend(profile, make_default=not args.no_default)
    print(_written(config, profile.name, made_default=not args.no_default))
    print("argtui starts llama-server with this file when a command needs it. Next: argtui doctor")
    return 0


def _gguf_problem(path: Path) -> str | None:
    """Why `path` cannot be a profile's model file, or None."""
    try:
        if not path.is_file():
            return "not a file" if path.exists() else "no such file"
        with path.open("rb") as file:
            magic = file.read(len(GGUF_MAGIC))
    except OSError as exc:  # a name the file system refuses (ENAMETOOLONG) is asked about too
        return "file name too long" if exc.errno == errno.ENAMETOOLONG else f"cannot be read: {exc.strerror}"
    return None if magic == GGUF_MAGIC else "not a GGUF file (it does not start with the GGUF signature)"


def _written(config: Config, name: str, made_default: bool) -> str:
    """The profile's table as the config file now holds it, and where."""
    table = tomlkit.dumps({"backends": {name: config.to_toml_dict()["backends"][name]}})
    default = " and made it the default backend" if made_default else ""
    return f"wrote profile {name!r} to {config.paths.config_file}{default}:\n\n{table}"


@contextmanager
def key_file_while_serving(path: Path, key: str) -> Iterator[Path]:
    """`key` in the file `path` for as long as the block runs. write_text_file makes the file
    with mkstemp, whose mode 0600 the rename keeps: only this user can read the key."""
    write_text_file(path, key + "\n", make_parents=True)
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def _serve_vllm(args) -> int:
    console = Console()
    config = load_config()
    name = args.name or "vllm-local"
    if Path(name).name != name:  # the name names the key file too
        raise ArgtuiError(f"--name {name!r}: a profile name cannot be a path")
    # Absolute: other processes, started elsewhere, read it.
    key_path = Path(os.path.abspath(config.paths.data_dir / "served" / f"{name}.key"))

    def starting(server: ManagedServer, why: str | None) -> None:  # unwrapped: commands and paths are copied
        if why:
            console.print(f"{why}; starting vLLM as a module of {server.command[0]} instead, with the same flags",
                          markup=False, highlight=False, soft_wrap=True)
        console.print(f"starting: {' '.join(server.command)}\nlog: {server.log_path}", markup=False, highlight=False,
                      soft_wrap=True)

    async def run() -> None:
        server = await start_vllm(
            args.model, config.paths.data_dir / "logs", args.vllm_args, args.port, args.startup_timeout, starting
        )
        try:
            with key_file_while_serving(key_path, server.api_key):
                await registered_until_stopped(server)
        finally:
            server.stop()

    async def registered_until_stopped(server: ManagedServer) -> None:
        profile, measured = await with_measured_speed(BackendProfile(
            name=name,
            kind="vllm",
            base_urls=[server.url],
            model=served_model_name(args.model, args.vllm_args),  # requests for another name get a 404
            api_key_file=str(key_path),
            max_concurrency=args.max_concurrency,
            send_seed=not cpu_build(),  # the CPU build's engine dies on concurrent seeded requests
        ))
        console.print(measured, markup=False, highlight=False)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):  # before registering: from then on either ends the wait below
            loop.add_signal_handler(sig, stop.set)
        config.add_backend(profile, make_default=not args.no_default)
        console.print(Text.assemble(
            ("ready", "green"), f" after {server.ready_after_s:.1f} s at {server.url}; registered profile ",
            (name, "bold"), f" in {config.paths.config_file}. Ctrl-C stops the server.",
        ), highlight=False)
        while not stop.is_set() and server.running:
            try:
                await asyncio.wait_for(stop.wait(), timeout=1.0)
            except asyncio.TimeoutError:
                pass

    asyncio.run(run())
    return 0
