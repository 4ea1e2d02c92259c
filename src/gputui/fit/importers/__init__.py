"""Importers: turn files users already have (Keras JSON / .keras archives, Hugging Face
configs, GGUF headers) into the fit checker's model description, and nothing else.

`detect.detect_kind` decides which importer a file needs from its content, so a
Keras `model.json` and a Hugging Face `config.json` are told apart without
relying on their names. `keras.load_keras` turns a Keras file into one
functional model table (the models file's syntax); the caller adds batch size,
optimizer and mode and parses it like any other table.
"""

from gputui.fit.importers.detect import FILE_KINDS, FileKind, detect_kind
from gputui.fit.importers.keras import KerasModel, keras_table, load_keras

__all__ = [
    "FILE_KINDS",
    "FileKind",
    "KerasModel",
    "detect_kind",
    "keras_table",
    "load_keras",
]
