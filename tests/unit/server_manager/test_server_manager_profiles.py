"""Profiles: loading, merging, validation messages, and the pure argv builders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from server_manager.errors import ModelDirMissing, NoGpuDevices, PortInUse, ProfileInvalid
from server_manager.profiles import (
    BUNDLED_DIR,
    Profile,
    RestartPolicy,
    available_profiles,
    container_argv,
    container_env,
    load_profile,
    native_argv,
)

HOME = Path("/home/ana/.local/share/longdoc")
ENV_FILE = HOME / "server" / "engine.env"
CONFIG = HOME / "server" / "engine.yaml"


def argv_of(profile: Profile, runtime: str = "podman", tp_size: int = 1) -> list[str]:
    """The run line for ``profile`` with this home's key files."""
    return container_argv(
        profile, runtime=runtime, tp_size=tp_size, home=HOME, env_file=ENV_FILE, config_file=CONFIG
    )


def write(home: Path, name: str, text: str) -> Path:
    (home / "profiles").mkdir(exist_ok=True)
    path = home / "profiles" / f"{name}.toml"
    path.write_text(text)
    return path


def test_bundled_profiles_all_load() -> None:
    names = available_profiles(None)
    assert {
        "sglang-rocm",
        "sglang-rocm-yarn",
        "sglang-cuda",
        "vllm-rocm",
        "native",
        "external",
    } <= set(names)
    for name in names:
        assert load_profile(name, None).name == name


def test_default_rocm_argv_is_exact() -> None:
    profile = load_profile("sglang-rocm", None)
    argv = argv_of(profile, tp_size=8)
    model = str(Path("~/models/Qwen3.5-35B-A3B").expanduser())
    assert argv == [
        "podman",
        "run",
        "--detach",
        "--pull=never",
        "--name",
        "longdoc-sglang-30000",
        "--label",
        "longdoc.managed=1",
        "--label",
        "longdoc.profile=sglang-rocm",
        "--label",
        "longdoc.port=30000",
        "--label",
        f"longdoc.home={HOME}",
        "--publish",
        "127.0.0.1:30000:30000",
        "--device=/dev/kfd",
        "--device=/dev/dri",
        "--group-add",
        "video",
        "--ipc=host",
        "--security-opt",
        "seccomp=unconfined",
        "--volume",
        f"{model}:/model:ro",
        "--volume",
        f"{CONFIG}:/run/longdoc/engine.yaml:ro",
        "--env-file",
        str(ENV_FILE),
        "--entrypoint",
        "python3",
        "lmsysorg/sglang-rocm:v0.5.15.post1-rocm720-mi30x-20260715",
        "-m",
        "sglang.launch_server",
        "--config",
        "/run/longdoc/engine.yaml",
        "--model-path",
        "/model",
        "--served-model-name",
        "Qwen3.5-35B-A3B",
        "--host",
        "0.0.0.0",
        "--port",
        "30000",
        "--reasoning-parser",
        "qwen3",
        "--tool-call-parser",
        "qwen3_coder",
        "--attention-backend",
        "triton",
        "--enable-metrics",
        "--enable-cache-report",
        "--tp-size",
        "8",
        "--mamba-radix-cache-strategy",
        "no_buffer",
    ]


def test_yarn_profile_extends_rocm_with_the_facts_sheet_override() -> None:
    profile = load_profile("sglang-rocm-yarn", None)
    argv = argv_of(profile, runtime="docker")
    assert profile.image == load_profile("sglang-rocm", None).image
    assert argv[argv.index("--context-length") + 1] == "524288"
    override = json.loads(argv[argv.index("--json-model-override-args") + 1])
    assert override == {
        "text_config": {
            "rope_parameters": {
                "mrope_interleaved": True,
                "mrope_section": [11, 11, 10],
                "rope_type": "yarn",
                "rope_theta": 10000000,
                "partial_rotary_factor": 0.25,
                "factor": 2.0,
                "original_max_position_embeddings": 262144,
            }
        }
    }
    env = container_env(profile)
    assert env["SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"] == "1"
    assert env["SGLANG_USE_AITER"] == "1"  # env tables merge


def test_mem_fraction_and_context_length_when_set(tmp_path: Path) -> None:
    write(tmp_path, "sglang-rocm", "mem_fraction_static = 0.85\ncontext_length = 131072\n")
    profile = load_profile("sglang-rocm", tmp_path)
    argv = argv_of(profile, runtime="docker", tp_size=2)
    assert argv[argv.index("--mem-fraction-static") + 1] == "0.85"
    assert argv[argv.index("--context-length") + 1] == "131072"
    assert profile.source == tmp_path / "profiles" / "sglang-rocm.toml"


def test_vllm_argv() -> None:
    profile = load_profile("vllm-rocm", None)
    argv = argv_of(profile, runtime="docker", tp_size=4)
    tail = argv[argv.index("--entrypoint") :]
    assert tail[:4] == ["--entrypoint", "vllm", "vllm/vllm-openai-rocm:latest", "serve"]
    assert tail[4] == "/model"
    assert "--tensor-parallel-size" in tail and "--enable-auto-tool-choice" in tail
    assert argv[argv.index("--name") + 1] == "longdoc-vllm-30000"


def test_native_argv_binds_loopback() -> None:
    profile = load_profile("native", None)
    argv = native_argv(profile, tp_size=1, config_file=CONFIG)
    assert argv[:5] == ["python3", "-m", "sglang.launch_server", "--config", str(CONFIG)]
    assert argv[argv.index("--host") + 1] == "127.0.0.1"
    assert argv[argv.index("--model-path") + 1] == str(
        Path("~/models/Qwen3.5-35B-A3B").expanduser()
    )


def test_engine_args_placeholders_and_extra_mounts(tmp_path: Path) -> None:
    write(
        tmp_path,
        "mine",
        """
extends = "sglang-rocm"
image = "localhost/x:1"
engine_args = ["--port", "{port}", "--name", "{served_model_name}"]
extra_engine_args = ["--flag"]
mounts = ["/data:/data:ro"]
devices = []
extra_runtime_args = ["--runtime", "runc"]
[env]
A = "b"
""",
    )
    profile = load_profile("mine", tmp_path)
    argv = argv_of(profile)
    assert argv[-7:] == [
        "--config",
        "/run/longdoc/engine.yaml",
        "--port",
        "30000",
        "--name",
        "Qwen3.5-35B-A3B",
        "--flag",
    ]
    assert "--device=/dev/kfd" not in argv
    assert argv[argv.index("/data:/data:ro") - 1] == "--volume"
    env = container_env(profile)
    assert env["A"] == "b" and env["SGLANG_USE_AITER"] == "1"
    assert argv.index("--runtime") < argv.index("--entrypoint")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bogus = 1", "unknown key 'bogus'"),
        ('port = "x"', "port must be an integer, not 'x'"),
        ("port = 70000", "port must be between 1 and 65535, not 70000"),
        ('kind = "vm"', "kind must be one of container, native, external, not 'vm'"),
        ("mem_fraction_static = 1.5", "mem_fraction_static must be between 0 and 1"),
        ('mounts = ["relative:/x"]', "must start with an absolute host path"),
        ('mounts = ["/only-host"]', "must look like /host/path:/container/path[:ro]"),
        ("[restart]\nmax_restart = 3", "unknown key 'restart.max_restart'"),
        ('engine_args = ["{nope}"]', "uses an unknown placeholder"),
        ("port = ", "not valid TOML"),
    ],
)
def test_invalid_user_profile_names_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, "sglang-rocm", text + "\n")
    with pytest.raises(ProfileInvalid) as caught:
        load_profile("sglang-rocm", tmp_path)
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)
    assert caught.value.exit_code == 16


def test_required_keys(tmp_path: Path) -> None:
    write(tmp_path, "ext", 'kind = "external"\nurl = "localhost:30000"\n')
    with pytest.raises(ProfileInvalid, match="url must start with http"):
        load_profile("ext", tmp_path)
    write(tmp_path, "c", 'kind = "container"\nmodel_dir = "/m"\n')
    with pytest.raises(ProfileInvalid, match="image is required for a container profile"):
        load_profile("c", tmp_path)


def test_unknown_profile_and_extends_loop(tmp_path: Path) -> None:
    with pytest.raises(ProfileInvalid, match="No profile named 'nope'"):
        load_profile("nope", tmp_path)
    write(tmp_path, "a", 'extends = "b"\n')
    write(tmp_path, "b", 'extends = "a"\n')
    with pytest.raises(ProfileInvalid, match="extends forms a loop"):
        load_profile("a", tmp_path)


def test_bundled_dir_is_in_resources() -> None:
    assert BUNDLED_DIR.parts[-2:] == ("resources", "profiles")


def test_backoff_doubles_up_to_max_then_gives_up() -> None:
    policy = RestartPolicy(max_restarts=4, window_s=100, backoff_base_s=5, backoff_max_s=12)
    assert policy.next_delay([], now=1000) == 5
    assert policy.next_delay([990], now=1000) == 10
    assert policy.next_delay([980, 990], now=1000) == 12  # capped
    assert policy.next_delay([970, 980, 990, 995], now=1000) is None
    # Restarts older than the window no longer count.
    assert policy.next_delay([800, 850, 880, 895], now=1000) == 5
    assert RestartPolicy(max_restarts=0).next_delay([], now=0) is None


def test_every_profile_field_is_a_key_with_the_dataclass_default(tmp_path: Path) -> None:
    """The schema is the dataclass: a new field needs no second (or third) declaration."""
    from dataclasses import fields

    write(tmp_path, "bare", 'kind = "external"\nurl = "http://h:1"\n')
    profile = load_profile("bare", tmp_path)
    for f in fields(Profile):
        if f.name in ("name", "source", "user_file", "kind", "url", "restart", "env"):
            continue
        assert getattr(profile, f.name) == f.default, f.name
    assert profile.restart == RestartPolicy()
    # Each field's TOML key is accepted (with a value of the field's type) ...
    write(
        tmp_path,
        "all",
        'extends = "sglang-rocm"\ngrace_period_s = 7\nready_timeout_s = 9.5\npython = "py"\n'
        'tool_call_parser = ""\nengine_args = ["--port", "{port}"]\n[restart]\nwindow_s = 1\n',
    )
    loaded = load_profile("all", tmp_path)
    assert (loaded.grace_period_s, loaded.ready_timeout_s, loaded.python) == (7.0, 9.5, "py")
    assert isinstance(loaded.grace_period_s, float) and loaded.restart.window_s == 1.0
    assert loaded.engine_args == ("--port", "{port}")
    # ... and its choices come from the Literal type.
    write(tmp_path, "bad", 'extends = "sglang-rocm"\nengine = "tgi"\n')
    with pytest.raises(ProfileInvalid, match="engine must be one of sglang, vllm, not 'tgi'"):
        load_profile("bad", tmp_path)


def test_problems_point_at_the_users_file_not_the_bundled_one(tmp_path: Path) -> None:
    from server_manager.preflight import check_devices, check_model_dir

    profile = load_profile("sglang-rocm", tmp_path)  # no override file yet
    mine = tmp_path / "profiles" / "sglang-rocm.toml"
    assert profile.user_file == mine
    assert profile.source.parent == BUNDLED_DIR
    missing = Profile(
        name="sglang-rocm",
        source=profile.source,
        user_file=mine,
        model_dir=str(tmp_path / "nope"),
        devices=("/dev/longdoc-no-such-device",),
    )
    with pytest.raises(ModelDirMissing) as caught:
        check_model_dir(missing)
    assert f"set model_dir in {mine}." in str(caught.value)
    assert str(BUNDLED_DIR) not in str(caught.value)
    with pytest.raises(NoGpuDevices, match=str(mine)):
        check_devices(missing)
    # A value that is only wrong once merged is reported against the user's file too.
    write(tmp_path, "c", 'kind = "container"\nmodel_dir = "/m"\n')
    with pytest.raises(ProfileInvalid) as invalid:
        load_profile("c", tmp_path)
    assert str(invalid.value).startswith(f"{tmp_path / 'profiles' / 'c.toml'}: image is required")


def test_preflight_reports_every_problem_at_once(tmp_path: Path) -> None:
    import socket

    from server_manager.errors import PreflightFailed
    from server_manager.preflight import run_checks

    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        profile = Profile(
            name="n",
            source=tmp_path / "n.toml",
            user_file=tmp_path / "n.toml",
            kind="native",
            model_dir=str(tmp_path / "no-model"),
            devices=("/dev/longdoc-no-such-device",),
            port=port,
        )
        with pytest.raises(PreflightFailed) as caught:
            run_checks(profile)
    error = caught.value
    assert [type(p) for p in error.problems] == [NoGpuDevices, ModelDirMissing, PortInUse]
    assert error.exit_code == NoGpuDevices.exit_code  # the most fundamental one's
    lines = str(error).splitlines()  # a list, one problem per line (as the app shows it)
    assert lines[0] == "3 problems prevent the start:"
    assert lines[1].startswith("• No GPU device nodes")
    assert lines[2].startswith("• The model directory")
    assert lines[3].startswith(f"• Port {port} is already in use")
    assert error.items == tuple(p.message for p in error.problems)
