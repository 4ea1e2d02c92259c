"""Loading the catalog: the shipped data validates, loads are cached, bad files fail in one line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gputui.catalog import Catalog, load_catalog
from gputui.catalog.models import Architecture, Card
from gputui.core.errors import UserError
from gputui.core.resources import catalog_dir

from .conftest import GOOD_CARD

MakeCatalog = Callable[..., Path]


def test_shipped_catalog_loads_every_file(catalog: Catalog) -> None:
    files = sorted(p.stem for p in (catalog_dir() / "cards").glob("*.toml"))
    assert set(files) <= set(catalog.architectures)
    assert {c.architecture for c in catalog.cards} == set(files)
    assert all(isinstance(c, Card) for c in catalog.cards)
    assert set(catalog.architectures) == {
        "pascal",
        "volta",
        "turing",
        "ampere",
        "ada",
        "hopper",
        "blackwell",
    }


def test_architecture_key_comes_from_table_name(catalog: Catalog) -> None:
    for key, arch in catalog.architectures.items():
        assert isinstance(arch, Architecture)
        assert arch.key == key


def test_load_is_cached_per_directory(scratch_catalog: MakeCatalog) -> None:
    assert load_catalog() is load_catalog()
    assert load_catalog() is load_catalog(catalog_dir())
    scratch = scratch_catalog(GOOD_CARD)
    other = load_catalog(scratch)
    assert other is load_catalog(scratch)
    assert other is not load_catalog()
    assert [c.name for c in other.cards] == ["Test Card"]


def test_good_scratch_card_loads(scratch_catalog: MakeCatalog) -> None:
    card = load_catalog(scratch_catalog(GOOD_CARD)).cards[0]
    assert card.memory_gib == 24
    assert card.fp16_tensor_tflops is None  # absent stays unknown, never 0


def _error(root: Path) -> str:
    with pytest.raises(UserError) as info:
        load_catalog(root)
    message = str(info.value)
    assert "\n" not in message
    assert info.value.exit_code == 2
    return message


def test_syntax_error_names_file_and_line(scratch_catalog: MakeCatalog) -> None:
    text = GOOD_CARD.replace('segment = "consumer"', "segment = consumer")  # line 6
    message = _error(scratch_catalog(text))
    assert (
        message.startswith("catalog/cards/test.toml:6: invalid TOML")
        or ":6: invalid TOML" in message
    )
    assert "test.toml" in message


def test_wrong_type_names_file_line_entry_and_field(scratch_catalog: MakeCatalog) -> None:
    second = GOOD_CARD.replace("Test Card", "Second Card").replace(
        "memory_gib = 24", 'memory_gib = "lots"'
    )
    message = _error(scratch_catalog(GOOD_CARD + "\n" + second))
    # the second entry starts at line 10; its memory_gib is the 7th line of the entry
    assert "test.toml:16:" in message
    assert 'card "Second Card"' in message
    assert "memory_gib" in message
    assert "valid number" in message


def test_unknown_field_is_rejected_with_its_line(scratch_catalog: MakeCatalog) -> None:
    text = GOOD_CARD + "fp4_tensor_tflops = 9000\n"
    message = _error(scratch_catalog(text))
    assert "test.toml:9:" in message
    assert "fp4_tensor_tflops" in message
    assert "Extra inputs" in message


def test_missing_field_points_at_the_entry(scratch_catalog: MakeCatalog) -> None:
    text = GOOD_CARD.replace('source = "made up for a test"\n', "")
    message = _error(scratch_catalog(text))
    assert "test.toml:2:" in message  # the entry's name line
    assert "source" in message and "Field required" in message


def test_entry_without_name_is_named_by_index(scratch_catalog: MakeCatalog) -> None:
    text = GOOD_CARD + "\n" + GOOD_CARD.replace('name = "Test Card"\n', "")
    message = _error(scratch_catalog(text))
    assert "card #2" in message and "name" in message


def test_dangling_architecture(scratch_catalog: MakeCatalog) -> None:
    message = _error(scratch_catalog(GOOD_CARD.replace('"ampere"', '"kepler"')))
    assert "test.toml:2:" in message
    assert "architecture" in message and "kepler" in message


def test_compute_capability_must_belong_to_architecture(scratch_catalog: MakeCatalog) -> None:
    message = _error(scratch_catalog(GOOD_CARD.replace('"8.6"', '"9.0"')))
    assert "compute_capability" in message and "9.0" in message


def test_duplicate_card_names(scratch_catalog: MakeCatalog) -> None:
    text = GOOD_CARD + "\n" + GOOD_CARD.replace("NVIDIA Test Card", "NVIDIA Other")
    message = _error(scratch_catalog(text))
    assert "duplicate" in message and "test.toml:11" in message


def test_shared_nvml_name_needs_different_memory(scratch_catalog: MakeCatalog) -> None:
    same_memory = GOOD_CARD + "\n" + GOOD_CARD.replace('name = "Test Card"', 'name = "Twin"')
    message = _error(scratch_catalog(same_memory))
    assert "NVIDIA Test Card" in message and "nvml_names" in message
    other_memory = (
        GOOD_CARD
        + "\n"
        + GOOD_CARD.replace('name = "Test Card"', 'name = "Big"').replace(
            "memory_gib = 24", "memory_gib = 48"
        )
    )
    names = [c.name for c in load_catalog(scratch_catalog(other_memory)).cards]
    assert names == ["Test Card", "Big"]


def test_unexpected_top_level_key(scratch_catalog: MakeCatalog) -> None:
    message = _error(scratch_catalog('title = "cards"\n' + GOOD_CARD))
    assert "test.toml:1:" in message and "title" in message


def test_architecture_file_errors(tmp_path: Path) -> None:
    root = tmp_path / "cat"
    root.mkdir()
    message = _error(root)
    assert "architectures.toml" in message and "missing" in message
    (root / "architectures.toml").write_text(
        '[ampere]\nname = "Ampere"\ncompute_capabilities = ["8.0"]\nyear = "soon"\nnotes = "x"\n'
    )
    message = _error(root)
    assert "architectures.toml:4:" in message and "year" in message and "ampere" in message


def test_architecture_table_must_not_repeat_its_key(tmp_path: Path) -> None:
    root = tmp_path / "cat"
    root.mkdir()
    (root / "architectures.toml").write_text(
        '[ampere]\nkey = "ampere"\nname = "Ampere"\ncompute_capabilities = ["8.0"]\n'
        'year = 2020\nnotes = "x"\n'
    )
    message = _error(root)
    assert "architectures.toml:2:" in message and "key" in message


def test_architecture_lookups(catalog: Catalog) -> None:
    assert catalog.architecture("ampere").name == "Ampere"
    assert catalog.architecture("Hopper").key == "hopper"
    with pytest.raises(UserError, match="unknown architecture 'kepler'"):
        catalog.architecture("kepler")
    ada = catalog.architecture_for_cc("8.9")
    assert ada is not None and ada.key == "ada"
    blackwell = catalog.architecture_for_cc("12.0")
    assert blackwell is not None and blackwell.key == "blackwell"
    assert catalog.architecture_for_cc("5.2") is None


def test_catalog_never_imports_textual() -> None:
    import subprocess
    import sys

    code = (
        "import sys, gputui.catalog, gputui.catalog.present; "
        "gputui.catalog.load_catalog(); print('textual' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
