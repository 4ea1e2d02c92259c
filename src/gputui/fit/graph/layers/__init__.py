"""Keras layers by family: output shape, parameter count, FLOPs and what autograd keeps.

Shapes and parameter counts follow Keras 3 (and Keras 2, where they agree) so
totals match `model.summary()` (`count_params()`). What each layer keeps for the
backward pass is modelled on PyTorch's autograd formulas (derivatives.yaml), the
framework the estimate is measured against, as Keras' torch backend runs the
layer: linear/conv keep their input, relu/sigmoid/tanh/softmax keep their output,
leaky_relu/elu/gelu keep their input, dropout keeps a mask, max-pool its input and
int64 indices, batch-norm its input, layer-norm its input plus per-position mean and
rstd, recurrent cells their gates per step.

Each module is one family; fit/graph/registry.py is the one table of every layer type.
"""
