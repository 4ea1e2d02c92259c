"""The layer engine: a graph of Keras-style layer calls and what each op keeps alive."""
