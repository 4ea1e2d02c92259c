"""Peak tensor memory of a piece of PyTorch work, as the accuracy benchmarks measure it.

Shared by fit_accuracy.py (layer models) and llm_accuracy.py (transformers), so both
compare their estimates with the same measurement:
  * CPU: the profiler's allocation events (profile_memory=True) carry the allocator's
    running total; the peak of that total during `work`, minus what was allocated
    before it started (a 4-byte marker tensor is the first event);
  * CUDA: torch.cuda.max_memory_allocated after reset_peak_memory_stats.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


def peak_cpu_bytes(work: Callable[[], object]) -> int:
    """Bytes of tensors alive at the CPU allocator's peak while `work` runs."""
    from torch._C._profiler import _EventType
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        torch.empty(1)  # marks the allocator total before the work
        work()
    events = []
    stack = list(prof.profiler.kineto_results.experimental_event_tree())  # type: ignore[union-attr]
    while stack:
        e = stack.pop()
        if e.tag == _EventType.Allocation:
            events.append(
                (e.start_time_ns, e.extra_fields.total_allocated, e.extra_fields.alloc_size)
            )
        stack.extend(e.children)
    events.sort()
    # the first event is the 4-byte marker: the total before it is the baseline
    baseline = events[0][1] - events[0][2]
    return int(max(total for _, total, _ in events) - baseline - 4)


def peak_cuda_bytes(work: Callable[[], object]) -> int:
    """Bytes the CUDA caching allocator handed out at its peak while `work` ran."""
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    work()
    torch.cuda.synchronize()
    return int(torch.cuda.max_memory_allocated() - before)
