"""The API key stays secret: never on an argv, blanked in logs; no proxy for loopback."""

from __future__ import annotations

import http.server
from collections.abc import Iterator
from pathlib import Path

import pytest

from server_manager import probe
from server_manager.errors import ProfileInvalid
from server_manager.logs import ServerLog, read_lines, redactor
from server_manager.profiles import (
    Profile,
    available_profiles,
    container_argv,
    container_env,
    engine_config_text,
    env_file_text,
    load_profile,
    native_argv,
    native_env,
)
from tests.support.recording_proxy import RecordingProxy, serving

KEY = "sekrit-Zq9-key_0123456789abcdefghijklmnopqrstuv"
HOME = Path("/home/ana/.local/share/longdoc")
CONFIG = HOME / "server" / "engine.yaml"
ENV_FILE = HOME / "server" / "engine.env"


def write(home: Path, name: str, text: str) -> Path:
    (home / "profiles").mkdir(exist_ok=True)
    path = home / "profiles" / f"{name}.toml"
    path.write_text(text)
    return path


def every_argv(profile: Profile) -> list[str]:
    """The argv Longdoc would run for this profile (container or native)."""
    if profile.kind == "container":
        return container_argv(
            profile,
            runtime="podman",
            tp_size=2,
            home=HOME,
            env_file=ENV_FILE,
            config_file=CONFIG,
        )
    return native_argv(profile, tp_size=2, config_file=CONFIG)


@pytest.mark.parametrize("name", [n for n in available_profiles(None) if n != "external"], ids=str)
def test_no_bundled_profile_puts_the_key_on_an_argv(name: str) -> None:
    profile = load_profile(name, None)
    argv = every_argv(profile)
    assert not any(KEY in arg for arg in argv)
    assert "--api-key" not in argv
    assert not any(arg.startswith("--env=") or arg in ("--env", "-e") for arg in argv)
    if profile.engine == "sglang":
        # SGLang gets it from the --config YAML, which must end in .yaml.
        config_at = argv.index("--config") + 1
        assert argv[config_at].endswith(".yaml")
        assert engine_config_text(KEY) == f'api-key: "{KEY}"\n'
        assert "VLLM_API_KEY" not in container_env(profile, KEY)
        if profile.kind == "container":
            assert f"{CONFIG}:/run/longdoc/engine.yaml:ro" in argv  # mounted read-only
    else:
        # vLLM reads VLLM_API_KEY (when no --api-key is given) from the 0600 env file.
        assert container_env(profile, KEY)["VLLM_API_KEY"] == KEY
        assert f"VLLM_API_KEY={KEY}\n" in env_file_text(container_env(profile, KEY))
        assert native_env(profile, {}, KEY)["VLLM_API_KEY"] == KEY


def test_bundled_container_profiles_leave_out_shm_size_with_host_ipc() -> None:
    for name in available_profiles(None):
        profile = load_profile(name, None)
        if profile.kind != "container":
            continue
        args = [*profile.runtime_args, *profile.extra_runtime_args]
        # podman refuses the pair: "cannot set shmsize when running in the host IPC namespace".
        assert not ("--ipc=host" in args and any(a.startswith("--shm-size") for a in args)), name


@pytest.mark.parametrize(
    ("key", "entry"),
    [
        ("engine_args", "{api_key}"),
        ("engine_args", "--api-key"),
        ("extra_engine_args", "--api-key=abc"),
        ("extra_engine_args", "--token={api_key}"),
    ],
)
def test_a_profile_cannot_put_the_key_back_on_argv(tmp_path: Path, key: str, entry: str) -> None:
    path = write(tmp_path, "mine", f'extends = "sglang-rocm"\n{key} = ["--port", "{entry}"]\n')
    with pytest.raises(ProfileInvalid) as caught:
        load_profile("mine", tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{path}: {key} entry {entry!r} would put the API key on the")
    assert "private --config file" in message
    assert caught.value.exit_code == 16


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('extra_engine_args = ["--config", "x.yaml"]', "Longdoc passes its own --config file"),
        ('[env]\nVLLM_API_KEY = "k"', "env.VLLM_API_KEY is set by Longdoc"),
        ('extra_runtime_args = ["--env", "VLLM_API_KEY=k"]', "would put the API key"),
        ('[env]\nA = "two\\nlines"', "env.A must be one line"),
    ],
)
def test_other_ways_around_the_key_files_are_refused(
    tmp_path: Path, text: str, expected: str
) -> None:
    write(tmp_path, "mine", f'extends = "vllm-rocm"\n{text}\n')
    with pytest.raises(ProfileInvalid, match=expected):
        load_profile("mine", tmp_path)


def test_logs_blank_the_key_when_written_and_when_read(tmp_path: Path) -> None:
    redact = redactor(KEY)
    assert redact(f"server_args=ServerArgs(api_key='{KEY}')") == (
        "server_args=ServerArgs(api_key='[redacted]')"
    )
    assert redactor("")("unchanged") == "unchanged"
    # A log written by an older Longdoc still holds the key: reading blanks it too.
    path = tmp_path / "server.log"
    log = ServerLog(path)
    log.write(f"--api-key {KEY}")
    log.close()
    lines = list(read_lines(path, secrets=(KEY,)))
    assert lines == ["--api-key [redacted]"]


# --- no proxy for loopback ------------------------------------------------------------------


@pytest.fixture
def fake_proxy() -> Iterator[RecordingProxy]:
    """A listening 'proxy' that records what reaches it and answers 502."""
    proxy = RecordingProxy()
    yield proxy
    proxy.close()


@pytest.fixture
def origin() -> Iterator[str]:
    """The 'server': answers 200 to GET /v1/models."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b'{"data": [{"id": "m"}]}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with serving(Handler) as url:
        yield url


@pytest.mark.parametrize("variable", ["http_proxy", "HTTP_PROXY", "all_proxy"])
def test_loopback_requests_never_go_through_a_proxy(
    monkeypatch: pytest.MonkeyPatch,
    fake_proxy: RecordingProxy,
    origin: str,
    variable: str,
) -> None:
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, fake_proxy.url)
    for url in (origin, origin.replace("127.0.0.1", "localhost")):
        assert probe.get(f"{url}/v1/models", KEY).status == 200
        assert probe.lists_model(url, KEY, "m")
    assert fake_proxy.requests == []  # the key never reached the proxy


def test_other_hosts_follow_the_proxy_environment(
    monkeypatch: pytest.MonkeyPatch, fake_proxy: RecordingProxy
) -> None:
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.setenv("http_proxy", fake_proxy.url)
    assert probe.get("http://gpu-box.invalid:30000/v1/models", "k").status == 502
    [(method, url, headers)] = fake_proxy.requests
    assert (method, url) == ("GET", "http://gpu-box.invalid:30000/v1/models")
    assert headers["Authorization"] == "Bearer k"


def test_loopback_detection() -> None:
    for url in (
        "http://127.0.0.1:1",
        "http://127.8.9.10",
        "http://[::1]:30000",
        "http://localhost",
    ):
        assert probe.is_loopback(url), url
    for url in ("http://10.0.0.1", "http://gpu-box:30000", "http://[::2]", "http://"):
        assert not probe.is_loopback(url), url
