"""`argtui config path|show`."""

from __future__ import annotations

import json

from rich.console import Console

from argtui.config import Paths, load_config


def register(subparsers) -> None:
    parser = subparsers.add_parser("config", help="where the config lives, and what it says")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    path = actions.add_parser("path", help="print the config file and data directory paths")
    path.set_defaults(handler=_path)
    show = actions.add_parser("show", help="print the effective configuration (never a key)")
    show.add_argument("--json", action="store_true", help="as JSON")
    show.set_defaults(handler=_show)


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
    console = Console()
    console.print(f"config file: {data['config_file']}" + ("" if data["config_file_exists"] else " (not created yet: defaults)"))
    console.print(f"data dir:    {data['data_dir']}")
    console.print(f"default backend: [bold]{data['default_backend']}[/]")
    for name, profile in profiles.items():
        key = profile["api_key_env"]
        key_text = f"{key} ({'set' if profile['api_key_set'] else 'not set'})" if key else "none"
        urls = ", ".join(profile["base_urls"]) or ("started by argtui" if name == "embedded" else "-")
        console.print(
            f"  [bold]{name}[/] kind={profile['kind'] or 'detected'} model={profile['model'] or '(served)'} "
            f"urls={urls} concurrency={profile['max_concurrency']} timeout={profile['timeout_s']}s "
            f"api key env={key_text}",
            highlight=False,
        )
    return 0
