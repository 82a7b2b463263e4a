"""Profiles: loading, merging, validation messages, and the pure argv builders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from server_manager.errors import ProfileInvalid
from server_manager.profiles import (
    BUNDLED_DIR,
    RestartPolicy,
    available_profiles,
    container_argv,
    load_profile,
    native_argv,
)

HOME = Path("/home/ana/.local/share/longdoc")


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
    argv = container_argv(profile, runtime="podman", api_key="KEY", tp_size=8, home=HOME)
    model = str(Path("~/models/Qwen3.5-35B-A3B").expanduser())
    assert argv == [
        "podman",
        "run",
        "--detach",
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
        "--shm-size",
        "16g",
        "--security-opt",
        "seccomp=unconfined",
        "--volume",
        f"{model}:/model:ro",
        "--env",
        "HF_HUB_OFFLINE=1",
        "--env",
        "SGLANG_USE_AITER=1",
        "--entrypoint",
        "python3",
        "lmsysorg/sglang-rocm:v0.5.15.post1-rocm720-mi30x-20260715",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "/model",
        "--served-model-name",
        "Qwen3.5-35B-A3B",
        "--host",
        "0.0.0.0",
        "--port",
        "30000",
        "--api-key",
        "KEY",
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
    argv = container_argv(profile, runtime="docker", api_key="K", tp_size=1, home=HOME)
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
    assert "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" in argv
    assert "SGLANG_USE_AITER=1" in argv  # env tables merge


def test_mem_fraction_and_context_length_when_set(tmp_path: Path) -> None:
    write(tmp_path, "sglang-rocm", "mem_fraction_static = 0.85\ncontext_length = 131072\n")
    profile = load_profile("sglang-rocm", tmp_path)
    argv = container_argv(profile, runtime="docker", api_key="K", tp_size=2, home=tmp_path)
    assert argv[argv.index("--mem-fraction-static") + 1] == "0.85"
    assert argv[argv.index("--context-length") + 1] == "131072"
    assert profile.source == tmp_path / "profiles" / "sglang-rocm.toml"


def test_vllm_argv() -> None:
    profile = load_profile("vllm-rocm", None)
    argv = container_argv(profile, runtime="docker", api_key="K", tp_size=4, home=HOME)
    tail = argv[argv.index("--entrypoint") :]
    assert tail[:4] == ["--entrypoint", "vllm", "vllm/vllm-openai-rocm:latest", "serve"]
    assert tail[4] == "/model"
    assert "--tensor-parallel-size" in tail and "--enable-auto-tool-choice" in tail
    assert argv[argv.index("--name") + 1] == "longdoc-vllm-30000"


def test_native_argv_binds_loopback() -> None:
    profile = load_profile("native", None)
    argv = native_argv(profile, api_key="K", tp_size=1)
    assert argv[:3] == ["python3", "-m", "sglang.launch_server"]
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
engine_args = ["--port", "{port}", "--key", "{api_key}", "--name", "{served_model_name}"]
extra_engine_args = ["--flag"]
mounts = ["/data:/data:ro"]
devices = []
extra_runtime_args = ["--runtime", "runc"]
[env]
A = "b"
""",
    )
    profile = load_profile("mine", tmp_path)
    argv = container_argv(profile, runtime="podman", api_key="SECRET", tp_size=1, home=tmp_path)
    assert argv[-7:] == [
        "--port",
        "30000",
        "--key",
        "SECRET",
        "--name",
        "Qwen3.5-35B-A3B",
        "--flag",
    ]
    assert "--device=/dev/kfd" not in argv
    assert argv[argv.index("/data:/data:ro") - 1] == "--volume"
    assert "A=b" in argv and "SGLANG_USE_AITER=1" in argv
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
