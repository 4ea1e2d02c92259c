"""Importers: turn files users already have (Keras JSON / .keras archives, Hugging Face
configs, GGUF headers) into the fit checker's model description, and nothing else.

`detect.detect_kind` decides which importer a file needs from its content, so a
Keras `model.json` and a Hugging Face `config.json` are told apart without
relying on their names.
"""

from gputui.fit.importers.detect import FILE_KINDS, FileKind, detect_kind

__all__ = ["FILE_KINDS", "FileKind", "detect_kind"]
