"""Which MIG profile would hold a job (gputui.fit.core.mig.advice): the profile table and the
per-instance answer, from instances as NVML reports them."""

from __future__ import annotations

from gputui.fit.core.mig import Instance, MigSlot, advice, profiles_for

GiB = 1 << 30
MiB = 1 << 20
A100 = "NVIDIA A100-SXM4-80GB"


def _inst(profile: str, gi: int, total_mib: int, free_mib: int, peak: float) -> Instance:
    slot = MigSlot(0, A100, gi - 1, profile, gi, 0, None, 81920 * MiB)
    return Instance(slot, total_mib * MiB, free_mib * MiB, int(peak * GiB))


def test_freed_memory_and_smallest_profile() -> None:
    peak = 20.36
    line = advice(
        [
            _inst("3g.40gb", 1, 40192, 16192, peak),
            _inst("2g.20gb", 2, 19968, 7680, peak),
            _inst("1g.10gb", 3, 9984, 7936, peak),
        ],
        81920 * MiB,
    )
    assert line is not None
    assert "fits the 3g.40gb (GI 1 / CI 0) once 4.6 GiB is freed there" in line
    assert "needs 3g.40gb (about 39.2 GiB) or larger" in line


def test_fits_now_gives_no_advice() -> None:
    assert advice([_inst("3g.40gb", 1, 40192, 30000, 20.0)], 81920 * MiB) is None


def test_small_job_names_the_smallest_profile() -> None:
    line = advice([_inst("2g.20gb", 1, 19968, 1000, 8.0)], 81920 * MiB)
    assert line is not None and "needs 1g.10gb (about 9.8 GiB)" in line


def test_too_big_for_any_profile_says_so() -> None:
    line = advice([_inst("7g.80gb", 0, 80896, 80000, 90.0)], 81920 * MiB)
    assert line is not None and "no MIG profile holds it" in line and "7g.80gb" in line


def test_unknown_gpu_says_it_does_not_know() -> None:
    slot = MigSlot(0, "NVIDIA Simulated GPU", 0, "3g.40gb", 1, 0, None, 81920 * MiB)
    line = advice([Instance(slot, 40192 * MiB, 100 * MiB, 20 * GiB)], 81920 * MiB)
    assert line is not None and "does not know this GPU's MIG profiles" in line
    assert profiles_for("NVIDIA A100-SXM4-40GB", 40960 * MiB)[0][0] == "1g.5gb"
    assert profiles_for("NVIDIA H100 80GB HBM3", 81559 * MiB)[-1][0] == "7g.80gb"


def test_a_profile_seen_on_the_gpu_gives_its_own_size() -> None:
    # 19.55 GiB: more than the 2g.20gb seen (19.5 GiB), less than 2 eighths scaled from the
    # 3g.40gb (19.6 GiB): the seen size decides, so 2g.20gb is not offered
    peak = 19.55
    line = advice(
        [_inst("3g.40gb", 1, 40192, 100, peak), _inst("2g.20gb", 2, 19968, 100, peak)],
        81920 * MiB,
    )
    assert line is not None and "needs 3g.40gb" in line
