"""gputui: a terminal dashboard for NVIDIA GPUs with a model fit checker."""

__version__ = "0.1.0"
