"""`tessera seed` writes the warehouse for its owner alone: 0600 files in a 0700 folder, from the first byte.

Modes are also read while the load runs (at the loader's `finish`, inside the last transaction), when SQLite's
rollback journal and the DuckDB loader's temporary CSV files exist: files the engines create themselves.
"""

from __future__ import annotations

import os
import stat

import pytest

from cli import seed as seeding
from cli.seed import seed

SCALE = seeding.MIN_SCALE


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def modes_in(folder) -> dict[str, int]:
    return {entry.name: mode(entry) for entry in folder.iterdir()}


@pytest.fixture
def modes_during_load(monkeypatch):
    """Records, per loader, the modes of the files in a folder while the load's last transaction is open."""
    seen: dict[str, dict[str, int]] = {}

    def recording(loader_class, folder_of):
        original = loader_class.finish

        def finish(loader):
            folder = folder_of(loader)
            seen[loader_class.__name__] = modes_in(folder)
            original(loader)

        monkeypatch.setattr(loader_class, "finish", finish)

    return seen, recording


def current_umask() -> int:
    previous = os.umask(0)
    os.umask(previous)
    return previous


def test_the_default_warehouse_is_0600_in_a_0700_var_folder_even_over_an_old_open_one(
        tmp_path, monkeypatch, modes_during_load):
    var = tmp_path / "var"
    folder = var / "warehouse"  # the default warehouse's own folder (shared.paths.default_warehouse)
    folder.mkdir(mode=0o755, parents=True)
    for opened in (var, folder):
        opened.chmod(0o755)
    old = folder / "warehouse.sqlite"
    old.write_bytes(b"")
    old.chmod(0o644)  # what earlier releases left behind
    monkeypatch.setenv("TESSERA_VAR_DIR", str(var))
    seen, recording = modes_during_load
    recording(seeding._SQLiteLoader, lambda loader: folder)
    umask_before = current_umask()

    seed(scale=SCALE, progress=False)

    during = seen["_SQLiteLoader"]
    assert during["warehouse.sqlite-journal"] == 0o600  # SQLite's own journal, created mid-load
    assert set(during.values()) == {0o600}
    assert mode(var) == mode(folder) == 0o700
    assert modes_in(folder) == {"warehouse.sqlite": 0o600}
    assert current_umask() == umask_before  # the process's umask is given back


def test_a_var_folder_that_does_not_exist_yet_is_made_0700(tmp_path, monkeypatch):
    var = tmp_path / "state" / "var"
    monkeypatch.setenv("TESSERA_VAR_DIR", str(var))

    seed(scale=SCALE, progress=False)

    assert mode(var) == 0o700 and mode(var.parent) == 0o700 and mode(var / "warehouse") == 0o700
    assert modes_in(var / "warehouse") == {"warehouse.sqlite": 0o600}


def test_a_new_sqlite_warehouse_is_created_private_from_the_start(tmp_path, modes_during_load):
    folder = tmp_path / "warehouse"
    folder.mkdir(mode=0o700)
    seen, recording = modes_during_load
    recording(seeding._SQLiteLoader, lambda loader: folder)

    seed(f"sqlite:///{folder / 'w.sqlite'}", scale=SCALE, progress=False)

    assert set(seen["_SQLiteLoader"].values()) == {0o600} and "w.sqlite" in seen["_SQLiteLoader"]
    assert modes_in(folder) == {"w.sqlite": 0o600}


def test_duckdb_files_and_the_temporary_csv_files_are_private(tmp_path, modes_during_load):
    folder = tmp_path / "duck"
    folder.mkdir(mode=0o700)
    seen, recording = modes_during_load
    temporary = {}

    def csv_folder(loader):
        temporary["mode"] = mode(loader.directory.name)
        return type(tmp_path)(loader.directory.name)

    recording(seeding._DuckDBLoader, csv_folder)

    seed(f"duckdb:///{folder / 'w.duckdb'}", scale=SCALE, progress=False)

    csv_modes = seen["_DuckDBLoader"]
    assert {name for name in csv_modes} == {f"{name}.csv" for name in seeding.TABLE_NAMES}
    assert set(csv_modes.values()) == {0o600} and temporary["mode"] == 0o700
    assert set(modes_in(folder).values()) == {0o600} and "w.duckdb" in modes_in(folder)


def test_an_existing_folder_of_the_persons_is_left_alone_but_named(tmp_path, capsys):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)

    seed(f"sqlite:///{shared / 'w.sqlite'}", scale=SCALE, progress=False)

    assert mode(shared) == 0o755
    assert mode(shared / "w.sqlite") == 0o600
    assert f"other users can enter {shared}" in capsys.readouterr().err


def test_a_missing_folder_of_the_persons_is_an_error_not_created(tmp_path):
    with pytest.raises(seeding.SeedError):
        seed(f"sqlite:///{tmp_path / 'absent' / 'w.sqlite'}", scale=SCALE, progress=False)
    assert not (tmp_path / "absent").exists()
