"""Pure parsers: podman inspect, amd-smi/rocm-smi/nvidia-smi, /metrics, SGLang's log stages."""

from __future__ import annotations

import json
from pathlib import Path

from server_manager.gpu import GpuInfo, parse_amd_smi, parse_nvidia_smi, parse_rocm_smi
from server_manager.probe import parse_metrics
from server_manager.progress import LoadProgress, Stage, stage_of
from server_manager.runtime import parse_inspect, parse_port_bindings

DATA = Path(__file__).parent / "data" / "server_manager"


# --- inspect (captured from real podman 4.3) ---------------------------------------------


def test_inspect_running() -> None:
    text = (DATA / "podman-inspect-running.json").read_text()
    [state] = parse_inspect(text)
    assert state.name == "cap1"
    assert state.running
    assert state.status == "running"
    assert state.pid > 0
    assert state.labels == {"longdoc.managed": "1", "longdoc.port": "30000"}
    assert parse_port_bindings(text) == [("127.0.0.1", "30000")]


def test_inspect_killed() -> None:
    [state] = parse_inspect((DATA / "podman-inspect-killed.json").read_text())
    assert not state.running and state.status == "exited"
    assert state.exit_code == 137
    assert state.pid == 0
    assert state.describe_exit() == "was killed by signal 9 (exit code 137)"


def test_inspect_oom_and_docker_shape() -> None:
    docker = [
        {
            "Id": "abc",
            "Name": "/longdoc-sglang-30000",
            "State": {
                "Status": "exited",
                "Running": False,
                "OOMKilled": True,
                "ExitCode": 137,
                "Pid": 0,
            },
            "Config": {"Labels": {"longdoc.managed": "1"}},
        }
    ]
    [state] = parse_inspect(json.dumps(docker))
    assert state.name == "longdoc-sglang-30000"
    assert state.oom_killed
    assert state.describe_exit() == "was killed for lack of memory (OOM)"
    created = [
        {"Id": "x", "Name": "n", "State": {"Status": "created", "Running": False, "ExitCode": 0}}
    ]
    assert parse_inspect(json.dumps(created))[0].exit_code is None
    assert parse_inspect("") == []


# --- GPU tools -----------------------------------------------------------------------------

AMD_SMI_ROCM6 = json.dumps(
    [
        {
            "gpu": 0,
            "usage": {
                "gfx_activity": {"value": 97, "unit": "%"},
                "umc_activity": {"value": 40, "unit": "%"},
                "mm_activity": "N/A",
                "vcn_activity": [0, "N/A"],
            },
            "mem_usage": {
                "total_vram": {"value": 196592, "unit": "MB"},
                "used_vram": {"value": 176932, "unit": "MB"},
                "free_vram": {"value": 19660, "unit": "MB"},
            },
        },
        {
            "gpu": 1,
            "usage": {"gfx_activity": "N/A"},
            "mem_usage": {
                "total_vram": {"value": 192, "unit": "GB"},
                "used_vram": "N/A",
                "free_vram": "N/A",
            },
        },
    ]
)


def test_amd_smi_list_shape_with_na() -> None:
    gpus = parse_amd_smi(AMD_SMI_ROCM6)
    assert gpus[0] == GpuInfo(
        index=0,
        utilization_pct=97.0,
        memory_used_mib=176932.0,
        memory_total_mib=196592.0,
        memory_used_pct=90.0,
    )
    assert gpus[1] == GpuInfo(
        index=1,
        utilization_pct=None,
        memory_used_mib=None,
        memory_total_mib=192 * 1024.0,
        memory_used_pct=None,
    )


def test_amd_smi_gpu_data_shape() -> None:
    wrapped = json.dumps({"gpu_data": json.loads(AMD_SMI_ROCM6)})
    assert parse_amd_smi(wrapped) == parse_amd_smi(AMD_SMI_ROCM6)


def test_rocm_smi() -> None:
    text = json.dumps(
        {
            "card0": {
                "GPU use (%)": "12",
                "GPU Memory Allocated (VRAM%)": "45",
                "GPU Memory Read/Write Activity (%)": "3",
                "VRAM Total Memory (B)": "206141652992",
                "VRAM Total Used Memory (B)": "92763750400",
            },
            "card1": {"GPU use (%)": "N/A", "GPU Memory Allocated (VRAM%)": "N/A"},
            "system": {"Driver version": "6.8.5"},
        }
    )
    gpus = parse_rocm_smi(text)
    assert [g.index for g in gpus] == [0, 1]
    assert gpus[0].utilization_pct == 12.0
    assert gpus[0].memory_used_pct == 45.0
    assert round(gpus[0].memory_total_mib or 0) == 196592
    assert gpus[1] == GpuInfo(index=1)


def test_nvidia_smi() -> None:
    text = "0, NVIDIA H100 80GB HBM3, 87, 70000, 81559\n1, NVIDIA H100 80GB HBM3, [N/A], 5, 81559\n"
    gpus = parse_nvidia_smi(text)
    assert gpus[0] == GpuInfo(
        index=0,
        name="NVIDIA H100 80GB HBM3",
        utilization_pct=87.0,
        memory_used_mib=70000.0,
        memory_total_mib=81559.0,
        memory_used_pct=85.8,
    )
    assert gpus[1].utilization_pct is None


# --- metrics -------------------------------------------------------------------------------

METRICS = """\
# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{engine_type="unified",model_name="q",pp_rank="0",tp_rank="0"} 2.0
sglang:num_running_reqs{engine_type="unified",model_name="q",pp_rank="0",tp_rank="1"} 1.0
sglang:num_queue_reqs{model_name="q",tp_rank="0"} 4.0
sglang:token_usage{model_name="q",tp_rank="0"} 0.25
sglang:token_usage{model_name="q",tp_rank="1"} 0.5
sglang:cache_hit_rate{model_name="q"} 0.75
sglang:gen_throughput{model_name="q"} 41.5
sglang:context_len{model_name="q"} 262144.0
sglang:prompt_tokens_total{model_name="q"} 1.0e+06
sglang:mamba_usage{model_name="q"} NaN
"""


def test_parse_metrics_sums_counts_and_maxes_ratios() -> None:
    assert parse_metrics(METRICS) == {
        "running_requests": 3.0,
        "queued_requests": 4.0,
        "token_usage": 0.5,
        "cache_hit_rate": 0.75,
        "gen_throughput": 41.5,
        "context_len": 262144.0,
    }
    assert parse_metrics("") == {}


# --- log stages ----------------------------------------------------------------------------

SGLANG_LOG = "\n".join(
    [
        "[2026-10-30 10:00:00] server_args=ServerArgs(model_path='/model', ...)",
        "[2026-10-30 10:00:05 TP0] Load weight begin. avail mem=188.23 GB",
        "[2026-10-30 10:02:05 TP0] Load weight end. elapsed=120.1 s, "
        "type=Qwen3_5MoeForConditionalGeneration, avail mem=120.00 GB, mem usage=68.2 GB.",
        "[2026-10-30 10:02:06 TP0] Mamba Cache is allocated. max_mamba_cache_size: 512",
        "[2026-10-30 10:02:07 TP0] Memory pool end. avail mem=20.00 GB",
        "[2026-10-30 10:02:08 TP0] max_total_num_tokens=2000000, chunked_prefill_size=16384, "
        "max_prefill_tokens=16384, max_running_requests=64, context_len=262144, "
        "available_gpu_mem=20.00 GB",
        "[2026-10-30 10:02:09] INFO:     Uvicorn running on http://0.0.0.0:30000 "
        "(Press CTRL+C to quit)",
        "[2026-10-30 10:02:10] Prefill batch. #new-seq: 1, #new-token: 1, #cached-token: 0",
        "[2026-10-30 10:02:12] The server is fired up and ready to roll!",
    ]
)


def test_stages_in_order_with_pool_sizes() -> None:
    progress = LoadProgress()
    events = [e for line in SGLANG_LOG.splitlines() for e in progress.feed(line)]
    assert [e.stage for e in events] == list(Stage)[1:]
    assert progress.seen == list(Stage)
    assert progress.max_total_num_tokens == 2_000_000
    assert progress.context_len == 262_144
    assert events[0].line.endswith("Load weight begin. avail mem=188.23 GB")


def test_stages_never_go_backwards_and_reset() -> None:
    progress = LoadProgress()
    skipped = progress.feed("Load weight end. elapsed=1 s")
    assert [e.stage for e in skipped] == [Stage.WEIGHTS_LOADED]
    assert progress.feed("Load weight begin. avail mem=1 GB") == []
    ready = progress.feed("The server is fired up and ready to roll!")
    assert [e.stage for e in ready] == [Stage.WARMING_UP, Stage.READY]
    progress.reset()
    assert progress.stage == Stage.STARTING_CONTAINER
    assert stage_of("nothing to see") is None
    assert Stage.LOADING_WEIGHTS.label == "Loading weights…"
    assert Stage.MEMORY_POOL_READY.key == "memory_pool_ready"


def test_runtime_refusals_keep_the_runtimes_sentence() -> None:
    from server_manager.runtime import _is_permission_problem, _summary

    podman = "Error: unknown flag: --no-such-flag\nSee 'podman run --help'\n"
    assert _summary(podman) == "Error: unknown flag: --no-such-flag"
    assert _summary("") == "no output"
    assert _summary("one\ntwo\n") == "two"
    docker = (
        "docker: permission denied while trying to connect to the Docker daemon socket at "
        "unix:///var/run/docker.sock: Post ...: dial unix /var/run/docker.sock: connect: "
        "permission denied.\nSee 'docker run --help'."
    )
    assert _is_permission_problem(_summary(docker))
    # A file the container may not read is the run's problem, not the user's runtime access.
    assert not _is_permission_problem("Error: stat /model: permission denied")
