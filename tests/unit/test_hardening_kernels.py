"""Issue 27 finding 11: a native kernel is loaded only as it was checked. The attacks: a library
swapped in at its path between the check (its sha256) and the load; a kernels folder below a
folder another user may write to (who can then move ours aside and put theirs in its place);
the library itself replaced by a link to another file."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from engine import native

pytestmark = pytest.mark.skipif(native.compiler() is None, reason="no C++ compiler")


def _source(folder: Path, name: str, value: int) -> Path:
    path = folder / f"{name}.cpp"
    path.write_text(f'extern "C" int which() {{ return {value}; }}\n')
    return path


def _which(library) -> int:
    return library.which()


def test_a_library_swapped_after_its_check_is_not_the_one_loaded(tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLORER_CACHE", str(tmp_path / "cache"))
    checked = _source(tmp_path, "checked", 1)
    intruder = native.build(_source(tmp_path, "intruder", 2), "intruder")
    original_check = native.check_kernel

    def check_then_swap(library, *args, **kwargs):
        result = original_check(library, *args, **kwargs)
        swapped = library.with_name("swap.tmp")
        swapped.write_bytes(intruder.read_bytes())
        os.chmod(swapped, 0o700)
        os.replace(swapped, library)        # the path now names the intruder's code
        return result

    monkeypatch.setattr(native, "check_kernel", check_then_swap)
    assert _which(native.load(checked, "checked")) == 1


def test_a_kernels_folder_below_a_folder_others_may_write_to_is_refused(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    monkeypatch.setenv("EXPLORER_CACHE", str(shared / "cache"))
    library = native.build(_source(tmp_path, "kernel", 3), "kernel")
    native.check_kernel(library)
    os.chmod(shared, 0o777)                                   # anyone may rename cache/ away
    with pytest.raises(native.KernelRefused, match=f"{shared}, above the kernels' folder, may be written"):
        native.check_kernel(library)
    with pytest.raises(native.KernelRefused, match="above the kernels' folder"):
        native.kernel_dir()
    with pytest.raises(native.KernelRefused, match="above the kernels' folder"):
        native.load(tmp_path / "kernel.cpp", "kernel")
    os.chmod(shared, 0o1777)                                  # sticky, as /tmp: only owners rename
    native.check_kernel(library)
    if os.getuid() == 0:                                      # root may give it away
        os.chmod(shared, 0o755)
        os.chown(shared, 4242, -1)                            # someone else's, though closed
        with pytest.raises(native.KernelRefused, match="above the kernels' folder, belongs to another"):
            native.check_kernel(library)


def test_a_kernels_folder_reached_through_a_link_in_an_open_folder_is_refused(tmp_path, monkeypatch):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    monkeypatch.setenv("EXPLORER_CACHE", str(private / "cache"))
    library = native.build(_source(tmp_path, "kernel", 4), "kernel")
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    os.chmod(open_folder, 0o777)
    (open_folder / "cache").symlink_to(private / "cache")     # others may re-point this link
    linked = open_folder / "cache" / "kernels" / library.name
    with pytest.raises(native.KernelRefused, match="above the kernels' folder, may be written"):
        native.check_kernel(linked)


def test_a_library_that_is_a_link_is_refused_even_to_a_valid_one(tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLORER_CACHE", str(tmp_path / "cache"))
    library = native.build(_source(tmp_path, "kernel", 5), "kernel")
    real = library.with_name("real.so")
    os.replace(library, real)
    library.symlink_to(real)
    digest = library.with_name(library.name + ".sha256")
    assert stat.S_ISREG(os.lstat(digest).st_mode)
    with pytest.raises(native.KernelRefused, match="is a symbolic link"):
        native.check_kernel(library)


def test_load_still_loads_a_checked_kernel_and_each_by_its_own_name(tmp_path, monkeypatch):
    """Two kernels loaded one after the other are two libraries (glibc names a library by the
    path it was opened through, /proc/self/fd/N here: N is never reused)."""
    monkeypatch.setenv("EXPLORER_CACHE", str(tmp_path / "cache"))
    first = native.load(_source(tmp_path, "first", 6), "first")
    second = native.load(_source(tmp_path, "second", 7), "second")
    assert (_which(first), _which(second)) == (6, 7)
