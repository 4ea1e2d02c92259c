"""The cards the project promises to cover are in the catalog (by catalog or NVML name)."""

from __future__ import annotations

import pytest

from gputui.catalog import Catalog

REQUIRED = [
    "Tesla V100-SXM2-16GB",
    "Tesla V100-SXM2-32GB",
    "Tesla V100-PCIE-16GB",
    "Tesla V100-PCIE-32GB",
    "GeForce RTX 2080 Ti",
    "Quadro RTX 6000",
    "Quadro RTX 8000",
    "GeForce RTX 3080",
    "GeForce RTX 3090",
    "NVIDIA GeForce RTX 3090 Ti",
    "NVIDIA A100-PCIE-40GB",
    "NVIDIA A100-SXM4-40GB",
    "NVIDIA A100 80GB PCIe",
    "NVIDIA A100-SXM4-80GB",
    "NVIDIA RTX A4000",
    "NVIDIA RTX A5000",
    "NVIDIA RTX A6000",
    "NVIDIA A10",
    "NVIDIA A30",
    "NVIDIA A40",
    "Tesla P100-PCIE-16GB",
    "Tesla T4",
    "TITAN RTX",
    "NVIDIA GeForce RTX 4090",
    "NVIDIA RTX 6000 Ada Generation",
    "NVIDIA L4",
    "NVIDIA L40S",
    "NVIDIA H100 PCIe",
    "NVIDIA H100 80GB HBM3",
    "NVIDIA H200",
    "NVIDIA B200",
    "NVIDIA B300 SXM6 AC",
    "NVIDIA H20",
    "NVIDIA H800",
    "NVIDIA H20-3e",
    "NVIDIA GeForce RTX 5090",
]


@pytest.mark.parametrize("nvml_name", REQUIRED)
def test_required_card_present(catalog: Catalog, nvml_name: str) -> None:
    holders = [c for c in catalog.cards if nvml_name in c.nvml_names]
    assert holders, f"no catalog card reports the NVML name {nvml_name!r}"
