"""The engine's C++ kernels (engine/kernels/fused_decode.cpp, engine/kernels/*.cpp): compiled
once per machine with the system C++ compiler, kept in a private folder, checked before loading.

Loading a shared library runs its code, so a kernel is loaded only from a folder that this
user owns and nobody else may write to (created 0700), below folders nobody else may change,
and only if its sha256 equals the digest recorded when this process's user built it
(check_kernel); anything else is refused. The library is opened once, without following a
link, hashed through that descriptor and loaded through it (/proc/self/fd), so a file swapped
in after the check is never the one loaded. A library
is named by a hash of its source, the flags, the compiler's version and the CPU's flags, so an
edit, another compiler or another machine builds a new one.

    lib = load(SOURCE, "fused decode")   # built on first use (~1-2 s), then checked and loaded
"""
from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import platform
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

from models.paths import cache_dir

# -march=native: a kernel is built on the machine that runs it (the library's name includes the
# CPU's flags), so it may use every vector extension that machine has
FLAGS = ["-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-std=c++17"]


def compiler() -> Optional[str]:
    return os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")


class KernelRefused(RuntimeError):
    """A built kernel, or the folder it lives in, is not safe to load (see check_kernel)."""


def _check_private(path: Path, what: str) -> None:
    """Refuse a file or folder that is a symbolic link, belongs to another user, or that the
    group or others may write to: whoever could replace a kernel could run code here."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise KernelRefused(f"the kernels' {what} {path} is a symbolic link; refusing to load it")
    _check_owner_and_mode(st, path, what)


def _check_owner_and_mode(st: os.stat_result, path: Path, what: str) -> None:
    if st.st_uid != os.getuid():
        raise KernelRefused(f"the kernels' {what} {path} belongs to another user "
                            f"(uid {st.st_uid}); refusing to load code from it")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise KernelRefused(f"the kernels' {what} {path} may be written by other users "
                            f"(mode {stat.S_IMODE(st.st_mode):o}); make it private (chmod 700) or delete it")


def _check_ancestors(folder: Path) -> None:
    """Refuse a folder that another user could move or replace through one of its ancestors:
    each must belong to root or to this user, and not be writable by the group or others
    unless its sticky bit is set (then only an entry's owner may rename or delete it, as in
    /tmp). Both the path as given and the one its links resolve to are checked, so a link on
    the way lies in a folder nobody else may change either."""
    uid = os.getuid()
    ancestors = set(Path(os.path.abspath(folder)).parents) | set(Path(os.path.realpath(folder)).parents)
    for ancestor in sorted(ancestors):
        st = os.stat(ancestor)
        if st.st_uid not in (0, uid):
            raise KernelRefused(f"{ancestor}, above the kernels' folder, belongs to another user "
                                f"(uid {st.st_uid}); refusing to load code from below it")
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
            raise KernelRefused(f"{ancestor}, above the kernels' folder, may be written by other "
                                f"users (mode {stat.S_IMODE(st.st_mode):o}); refusing to load "
                                f"code from below it: choose another EXPLORER_CACHE")


def _open_private(path: Path, what: str) -> int:
    """A read-only descriptor of `path`, opened without following a link, whose file passes
    the owner and mode check (on the descriptor: what it names cannot change after)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise KernelRefused(f"the kernels' {what} {path} is a symbolic link; refusing to load it") from None
        raise
    try:
        _check_owner_and_mode(os.fstat(fd), path, what)
    except BaseException:
        os.close(fd)
        raise
    return fd


def kernel_dir() -> Path:
    """cache_dir()/kernels, created private (0700), checked by _check_private."""
    out_dir = cache_dir() / "kernels"
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    try:
        out_dir.mkdir(mode=0o700)
    except FileExistsError:
        pass
    _check_ancestors(out_dir)
    _check_private(out_dir, "folder")
    return out_dir


def _digest_path(library: Path) -> Path:
    return library.with_name(library.name + ".sha256")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _sha256_fd(fd: int) -> str:
    digest, offset = hashlib.sha256(), 0
    while chunk := os.pread(fd, 1 << 20, offset):
        digest.update(chunk)
        offset += len(chunk)
    return digest.hexdigest()


def _write_private(out_dir: Path, target: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=out_dir)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, target)


def build(source: Path, what: str) -> Path:
    """Compile `source` once per (source, compiler, CPU) into the kernels folder, record the
    library's sha256 beside it, and return the library's path. `what` names the kernel in
    errors. A concurrent build by another process is harmless: each writes temporary files and
    renames them into place."""
    cxx = compiler()
    if cxx is None:
        raise RuntimeError(f"the {what} kernel needs a C++ compiler (g++) to be built once; "
                           f"install g++ (the engine's plain PyTorch path runs without it)")
    version = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout
    cpu = ""
    if Path("/proc/cpuinfo").exists():
        cpu = next((line for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("flags")), "")
    key = hashlib.sha256("\n".join([source.read_text(), " ".join(FLAGS), version, cpu,
                                    platform.machine()]).encode()).hexdigest()[:16]
    out_dir = kernel_dir()
    target = out_dir / f"{source.stem}-{key}.so"
    if target.exists() and _digest_path(target).exists():
        return target
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=out_dir)
    os.close(fd)
    result = subprocess.run([cxx, *FLAGS, str(source), "-o", tmp], capture_output=True, text=True)
    if result.returncode != 0:
        os.unlink(tmp)
        raise RuntimeError(f"building the {what} kernel failed ({cxx}):\n{result.stderr[-2000:]}")
    os.chmod(tmp, 0o700)   # the linker creates its output with the umask's group bits
    _write_private(out_dir, _digest_path(target), _sha256(Path(tmp)).encode())
    os.replace(tmp, target)
    return target


def check_kernel(library: Path, keep_open: bool = False) -> Optional[int]:
    """Raise KernelRefused unless `library` may be loaded: its folder's ancestors changeable
    by nobody else (_check_ancestors), its folder and itself owned by this user and writable by
    nobody else, itself not a link, and its sha256 equal to the digest recorded at build. The
    library is opened once and hashed through that descriptor; with `keep_open`, the
    descriptor is returned (the file as checked, whatever the path names later)."""
    _check_ancestors(library.parent)
    _check_private(library.parent, "folder")
    fd = _open_private(library, "library")
    try:
        try:
            digest_fd = _open_private(_digest_path(library), "digest")
        except FileNotFoundError:
            raise KernelRefused(f"no digest recorded for {library}; delete it to rebuild") from None
        try:
            recorded = os.read(digest_fd, 256).decode(errors="replace").strip()
        finally:
            os.close(digest_fd)
        if _sha256_fd(fd) != recorded:
            raise KernelRefused(f"{library} differs from the library built here (sha256 mismatch); "
                                f"refusing to load it: delete it to rebuild")
    except BaseException:
        os.close(fd)
        raise
    if keep_open:
        return fd
    os.close(fd)
    return None


# The descriptor each loaded kernel came through. dlopen opens /proc/self/fd/N, the very file
# that was hashed, and takes that name as the library's: glibc answers a later dlopen of the
# same name with the library already loaded, so N stays open (and unused) while the process
# lives, and no other kernel can be loaded through the same name.
_LOADED_FDS: list[int] = []


def load(source: Path, what: str) -> ctypes.CDLL:
    """The kernel of `source`, built if needed, checked, loaded through the descriptor it was
    checked through (elsewhere than Linux, with no /proc/self/fd, by its path right after the
    check). torch must be imported first (every caller is inside the engine), so the kernel's
    libgomp.so.1 resolves to the OpenMP runtime torch already loaded: one thread pool in the
    process, not two competing for the cores."""
    path = build(source, what)
    fd = check_kernel(path, keep_open=True)
    if not os.path.isdir("/proc/self/fd"):
        os.close(fd)
        return ctypes.CDLL(str(path))
    try:
        library = ctypes.CDLL(f"/proc/self/fd/{fd}")
    except BaseException:
        os.close(fd)
        raise
    _LOADED_FDS.append(fd)
    return library
