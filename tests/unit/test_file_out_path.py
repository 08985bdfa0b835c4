"""Where a task writes a FILE_OUT (agent/executor/inputs.py): a fresh version path, its
folder made when missing, whatever an earlier attempt left there (a file, a folder)
removed first."""
from __future__ import annotations

from taskflow.agent.executor.inputs import _path_ref
from taskflow.wire import messages as M


def test_a_file_out_version_path_is_fresh_and_its_folder_exists(tmp_path):
    new = tmp_path / "v" / "deep" / "f.1"
    assert _path_ref(M.REF_FILE_OUT, str(new)) == str(new)
    assert new.parent.is_dir() and not new.exists()
    new.write_text("an earlier attempt's")
    assert _path_ref(M.REF_FILE_OUT, str(new)) == str(new) and not new.exists()
    (new / "inner").mkdir(parents=True)                 # a folder where the file goes
    assert _path_ref(M.REF_FILE_OUT, str(new)) == str(new) and not new.exists()
    gone = tmp_path / "v" / "link"
    gone.symlink_to(tmp_path / "nowhere")               # a dangling link: left as it was
    assert _path_ref(M.REF_FILE_OUT, str(gone)) == str(gone) and gone.is_symlink()


def test_a_version_folder_of_its_own_is_made_in_the_store(tmp_path):
    """The usual case: the run's store exists, the version's own folder not yet."""
    store = tmp_path / "data"
    store.mkdir()
    new = store / "d7v1" / "out.txt"
    assert _path_ref(M.REF_FILE_OUT, str(new)) == str(new)
    assert new.parent.is_dir() and list(new.parent.iterdir()) == []
    new.write_text("written")                           # the task sent again: made afresh
    assert _path_ref(M.REF_FILE_OUT, str(new)) == str(new) and not new.exists()


def test_a_version_in_a_shared_store_folder_leaves_its_neighbours_alone(tmp_path):
    """The folder of version n of a user folder's files (graph/registry.py) exists once
    the first of them was written: another file's version is written next to them."""
    folder = tmp_path / "data" / "f0v1"
    folder.mkdir(parents=True)
    (folder / "a.txt").write_text("a's")
    new = folder / "b.txt"
    assert _path_ref(M.REF_FILE_OUT, str(new)) == str(new) and not new.exists()
    new.write_text("an earlier attempt's")              # b's task sent again
    assert _path_ref(M.REF_FILE_OUT, str(new)) == str(new) and not new.exists()
    assert (folder / "a.txt").read_text() == "a's"
