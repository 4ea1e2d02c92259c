"""Which of a process's environment variables are GPU settings: Terraform's TF_ variables are not."""

from __future__ import annotations

from gputui.sources.host.source import gpu_environment


def test_terraform_variables_are_not_gpu_variables() -> None:
    env = gpu_environment(
        {
            "TF_CLI_CONFIG_FILE": "/root/.terraformrc",
            "TF_LOG": "DEBUG",
            "TF_DATA_DIR": "/tmp/tf",
            "TF_CPP_MIN_LOG_LEVEL": "2",
            "TF_FORCE_GPU_ALLOW_GROWTH": "true",
            "TF_XLA_FLAGS": "--tf_xla_auto_jit=2",
            "TF_CONFIG": '{"cluster": {}}',
            "TF_GPU_ALLOCATOR": "cuda_malloc_async",
        }
    )
    assert set(env) == {
        "TF_CPP_MIN_LOG_LEVEL",
        "TF_FORCE_GPU_ALLOW_GROWTH",
        "TF_XLA_FLAGS",
        "TF_CONFIG",
        "TF_GPU_ALLOCATOR",
    }
