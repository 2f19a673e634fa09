"""`argtui doctor` piped into another program prints every name and message whole."""

from __future__ import annotations

import os
import subprocess
import sys

from engines.llm.servers import free_loopback_port

PROFILE = "offline-with-a-rather-long-profile-name"
MODEL = "SmolLM2-1.7B-Instruct-with-a-very-long-model-file-name-Q4_K_M"


def test_piped_doctor_output_keeps_long_names_and_errors_whole(argtui_home):
    argtui_home.mkdir(parents=True, exist_ok=True)
    url = f"http://127.0.0.1:{free_loopback_port()}/v1"
    (argtui_home / "config.toml").write_text(
        f'default_backend = "{PROFILE}"\n[backends.{PROFILE}]\nkind = "openai"\nmodel = "{MODEL}"\n'
        f'base_urls = ["{url}"]\nretries = 0\ntimeout_s = 2\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "argtui", "doctor", "--backend", PROFILE],
        capture_output=True, text=True, timeout=120, env={**os.environ, "ARGTUI_HOME": str(argtui_home)},
    )
    assert done.returncode == 1  # the backend is unreachable
    row = next(line for line in done.stdout.splitlines() if PROFILE in line)
    assert f"{PROFILE} (default)" in row and "…" not in done.stdout
    assert f"{url}/models" in row  # the error names the whole URL, on the profile's own line
