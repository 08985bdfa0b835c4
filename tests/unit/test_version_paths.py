"""Where a file's versions go in the run's store (graph/registry.py): with the names they
have at the user's paths, version n of the files of one user folder together, a path
never used twice, a container's output in a folder of its own."""
from __future__ import annotations

import os

from taskflow.future import Future
from taskflow.graph.registry import Registry


class Host:
    n = 0

    def new_did(self) -> int:
        Host.n += 1
        return Host.n


def _version(reg: Registry, path: str, private: bool = False) -> str:
    item = reg.file_item(path) or reg.track_file(path, "file", Host())
    return reg.new_file_version(item, Future(None, None, Host().new_did()), private)


def test_the_files_of_one_folder_share_a_store_folder_per_version(tmp_path):
    reg = Registry(str(tmp_path / "data"))
    user = tmp_path / "results"
    firsts = [_version(reg, str(user / f"out{i}.txt")) for i in range(50)]
    assert {os.path.basename(p) for p in firsts} == {f"out{i}.txt" for i in range(50)}
    assert len({os.path.dirname(p) for p in firsts}) == 1       # one folder, not 50
    assert os.path.dirname(firsts[0]).startswith(str(tmp_path / "data"))
    second = _version(reg, str(user / "out3.txt"))              # a file's next version
    assert os.path.basename(second) == "out3.txt"
    assert os.path.dirname(second) != os.path.dirname(firsts[0])
    assert _version(reg, str(user / "out4.txt")) != second      # ...and another file's
    assert os.path.dirname(_version(reg, str(user / "out4.txt"))) != os.path.dirname(second)


def test_one_name_in_two_user_folders_gets_two_paths(tmp_path):
    reg = Registry(str(tmp_path / "data"))
    a = _version(reg, str(tmp_path / "a" / "out.txt"))
    b = _version(reg, str(tmp_path / "b" / "out.txt"))
    assert a != b and os.path.basename(a) == os.path.basename(b) == "out.txt"


def test_a_path_forgotten_and_written_again_gets_paths_never_used(tmp_path):
    """``delete_file`` forgets the file: its next versions count from 1 again, in a folder
    numbered anew, so they never land on a version an earlier task may still read."""
    reg = Registry(str(tmp_path / "data"))
    path = str(tmp_path / "r" / "x.dat")
    used = {_version(reg, path), _version(reg, path), _version(reg, str(tmp_path / "r" / "y"))}
    reg.forget_file(path)
    again = {_version(reg, path), _version(reg, path), _version(reg, str(tmp_path / "r" / "y"))}
    assert len(used) == 3 and len(again) == 3 and not used & again


def test_a_containers_output_has_a_folder_of_its_own(tmp_path):
    reg = Registry(str(tmp_path / "data"))
    user = tmp_path / "results"
    shared = _version(reg, str(user / "a.txt"))
    own = [_version(reg, str(user / f"c{i}.txt"), private=True) for i in range(3)]
    folders = {os.path.dirname(p) for p in own}
    assert len(folders) == 3 and os.path.dirname(shared) not in folders
    assert [os.path.basename(p) for p in own] == ["c0.txt", "c1.txt", "c2.txt"]


def test_the_root_folder_and_a_file_named_data_in_it_do_not_meet(tmp_path):
    reg = Registry(str(tmp_path / "data"))
    root = reg.track_file("/", "directory", Host())
    v_root = reg.new_file_version(root, Future(None, None, Host().new_did()))
    v_file = _version(reg, "/data")
    assert os.path.basename(v_root) == os.path.basename(v_file) == "data"
    assert v_root != v_file
