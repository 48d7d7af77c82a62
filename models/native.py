"""The engine's C++ kernels (models/decoders/fused_decode.cpp, models/kernels/*.cpp): compiled
once per machine with the system C++ compiler, kept in a private folder, checked before loading.

Loading a shared library runs its code, so a kernel is loaded only from a folder that this
user owns and nobody else may write to (created 0700), and only if its sha256 equals the digest
recorded when this process's user built it (check_kernel); anything else is refused. A library
is named by a hash of its source, the flags, the compiler's version and the CPU's flags, so an
edit, another compiler or another machine builds a new one.

    lib = load(SOURCE, "fused decode")   # built on first use (~1-2 s), then checked and loaded
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

from .paths import cache_dir

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
    if st.st_uid != os.getuid():
        raise KernelRefused(f"the kernels' {what} {path} belongs to another user "
                            f"(uid {st.st_uid}); refusing to load code from it")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise KernelRefused(f"the kernels' {what} {path} may be written by other users "
                            f"(mode {stat.S_IMODE(st.st_mode):o}); make it private (chmod 700) or delete it")


def kernel_dir() -> Path:
    """cache_dir()/kernels, created private (0700), checked by _check_private."""
    out_dir = cache_dir() / "kernels"
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    try:
        out_dir.mkdir(mode=0o700)
    except FileExistsError:
        pass
    _check_private(out_dir, "folder")
    return out_dir


def _digest_path(library: Path) -> Path:
    return library.with_name(library.name + ".sha256")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


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


def check_kernel(library: Path) -> None:
    """Raise KernelRefused unless `library` may be loaded: its folder and itself owned by this
    user and writable by nobody else, and its sha256 equal to the digest recorded at build."""
    _check_private(library.parent, "folder")
    _check_private(library, "library")
    digest = _digest_path(library)
    if not digest.exists():
        raise KernelRefused(f"no digest recorded for {library}; delete it to rebuild")
    _check_private(digest, "digest")
    if _sha256(library) != digest.read_text().strip():
        raise KernelRefused(f"{library} differs from the library built here (sha256 mismatch); "
                            f"refusing to load it: delete it to rebuild")


def load(source: Path, what: str) -> ctypes.CDLL:
    """The kernel of `source`, built if needed, checked, loaded. torch must be imported first
    (every caller is inside the engine), so the kernel's libgomp.so.1 resolves to the OpenMP
    runtime torch already loaded: one thread pool in the process, not two competing for the
    cores."""
    path = build(source, what)
    check_kernel(path)
    return ctypes.CDLL(str(path))
