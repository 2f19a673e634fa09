"""`argtui config path|show|use`."""

from __future__ import annotations

import asyncio
import json
import os
from urllib.parse import urlsplit

from rich.text import Text

from argtui.commands import output_console
from argtui.config import Paths, load_config


def register(subparsers) -> None:
    parser = subparsers.add_parser("config", help="where the config lives, and what it says")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    path = actions.add_parser("path", help="print the config file and data directory paths")
    path.set_defaults(handler=_path)
    show = actions.add_parser("show", help="print the effective configuration (never a key)")
    show.add_argument("--json", action="store_true", help="as JSON")
    show.set_defaults(handler=_show)
    use = actions.add_parser(
        "use", help="ask the server at URL what it is, save it as a profile and make it the default backend"
    )
    use.add_argument("url", metavar="URL", help="its OpenAI-compatible base URL, e.g. http://127.0.0.1:11434/v1")
    use.add_argument("--name", help="profile name (default: the kind detected, e.g. ollama)")
    use.add_argument("--model", metavar="M", help="model to use (default: the first one the server lists)")
    use.add_argument("--api-key-env", metavar="VAR", help="the environment variable that holds the key")
    use.set_defaults(handler=_use)


def _path(args) -> int:
    paths = Paths.resolve()
    print(f"config   {paths.config_file}")
    print(f"data     {paths.data_dir}")
    print(f"database {paths.database}")
    return 0


def _show(args) -> int:
    config = load_config()
    profiles = {name: config.profile(name).public_dict() for name in config.profile_names()}
    data = {
        "config_file": str(config.paths.config_file),
        "config_file_exists": config.paths.config_file.exists(),
        "data_dir": str(config.paths.data_dir),
        "default_backend": config.profile().name,
        "backends": profiles,
        "datasets": config.datasets,
    }
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    # Names, paths and URLs come from the config file: Text, never markup.
    console = output_console()
    console.print(Text(f"config file: {data['config_file']}"
                       + ("" if data["config_file_exists"] else " (not created yet: defaults)")))
    console.print(Text(f"data dir:    {data['data_dir']}"))
    console.print(Text.assemble("default backend: ", (data["default_backend"], "bold")))
    for name, profile in profiles.items():
        if profile["api_key_file"]:  # `argtui serve`'s, there while its server runs
            key_text = f"file={profile['api_key_file']} ({'present' if profile['api_key_set'] else 'missing'})"
        elif profile["api_key_env"]:
            key_text = f"env={profile['api_key_env']} ({'set' if profile['api_key_set'] else 'not set'})"
        else:
            key_text = "env=none"
        urls = ", ".join(profile["base_urls"]) or ("started by argtui" if name == "embedded" else "-")
        console.print(Text.assemble(
            "  ", (name, "bold"),
            f" kind={profile['kind'] or 'detected'} model={profile['model'] or '(served)'} "
            f"urls={urls} concurrency={profile['max_concurrency']} timeout={profile['timeout_s']}s "
            f"api key {key_text}",
        ))
    return 0


def _use(args) -> int:
    from engines.errors import ArgtuiError
    from engines.llm.local_servers import identify, with_measured_speed  # the HTTP client loads only for this action
    from engines.llm.profile import BackendProfile
    from engines.llm.types import BackendError
    from engines.terminal_text import print_data  # the models' names are the server's

    address = urlsplit(args.url)
    if address.scheme not in ("http", "https") or not address.hostname:
        raise ArgtuiError(f"{args.url}: expected an http:// or https:// URL, e.g. http://127.0.0.1:11434/v1")
    config = load_config()
    try:
        found = asyncio.run(identify(args.url, args.api_key_env))
    except BackendError as exc:
        raise ArgtuiError(f"no OpenAI-compatible server answered at {args.url}; nothing written ({exc})") from None
    print_data(f"found {found.kind} at {found.url}, serving {', '.join(found.models) or 'no model'}")
    if args.model and args.model not in found.models:
        print(f"note: the server does not list {args.model}; requests will ask for it all the same")
    # Named in the profile, so that a rerun asks the same model without asking the server first.
    model = args.model or (found.models[0] if found.models else "")
    profile = BackendProfile(
        name=args.name or found.kind, kind=found.kind, base_urls=[found.url], model=model,
        api_key_env=args.api_key_env,
    )
    profile, measured = asyncio.run(with_measured_speed(profile))
    print_data(measured)
    config.add_backend(profile, make_default=True)
    described = model + (" (the first listed)" if model and not args.model else "") or "the first one it lists"
    print_data(f"wrote profile {profile.name!r} (kind {found.kind}, model {described}) to {config.paths.config_file} "
               "and made it the default backend. Next: argtui doctor")
    overrides = [name for name in ("ARGTUI_BASE_URL", "ARGTUI_BACKEND") if os.environ.get(name)]
    if overrides:
        print(f"note: {' and '.join(overrides)} set in this environment choose the backend instead")
    return 0
