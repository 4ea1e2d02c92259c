"""The PyTorch front-end: the user's own nn.Module, traced on fake tensors.

`TorchSpec` (spec.py) says what to trace and is plain data; `load` runs the user's
factory; `trace` runs one step under FakeTensorMode with a dispatch mode that records
the bytes alive per category at every op (record.py); `model.TracedModel` turns traces
at a few batch sizes into the engine's phases and op list. torch is imported only by
the functions that need it, so this package imports without torch installed.
"""
