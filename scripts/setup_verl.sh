#!/usr/bin/env bash
# verl 0.9.1 for the CPU tests of pipelines/train, without touching a version in .venv.
#
# verl's own requirements would replace .venv's transformers (it wants <5.11) and pull ~1 GB (wandb,
# tensorboard, peft, ...); its extras pin a CUDA torch. The tests import only verl's tool, agent-loop and
# config modules, so this puts verl and just the pure-Python packages those imports need (pinned, --no-deps)
# in a folder of their own, $VENV/verl-0.9.1, used through PYTHONPATH:
#
#   bash scripts/setup_verl.sh
#   PYTHONPATH=.venv/verl-0.9.1 .venv/bin/python -m pytest -m verl tests/pipelines -q
#
# Everything else verl imports (torch, transformers, ray, pydantic, numpy, pandas, pyarrow, PIL) comes from
# .venv as scripts/setup.sh installed it. A GPU node installs verl the ordinary way (pipelines/train/README.md).
# Idempotent: re-running with the same pins does nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${M3AGENT_VENV:-.venv}
TARGET=${M3AGENT_VERL_DIR:-$VENV/verl-0.9.1}
PACKAGES=(
  "verl==0.9.1"
  "hydra-core==1.3.2" "omegaconf==2.3.0" "antlr4-python3-runtime==4.9.3"
  "tensordict==0.10.0" "pyvers==0.2.3"
  "codetiming==1.4.0" "cachetools==8.0.1" "msgspec==0.22.0" "pyzmq==27.3.0"
  "datasets==5.2.0" "dill==0.4.1" "multiprocess==0.70.19" "xxhash==4.1.0"
)
stamp="$TARGET/.m3agent-verl"
want="$(printf '%s\n' "${PACKAGES[@]}" | sha256sum | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
before="$("$VENV/bin/python" -m pip freeze)"
rm -rf "$TARGET"
"$VENV/bin/python" -m pip install -q --no-deps --target "$TARGET" "${PACKAGES[@]}"
if [ "$before" != "$("$VENV/bin/python" -m pip freeze)" ]; then
  echo "[setup_verl] .venv changed: that must never happen" >&2
  exit 1
fi
PYTHONPATH="$TARGET" "$VENV/bin/python" -c \
  "import verl.tools.base_tool, verl.experimental.agent_loop.agent_loop, hydra; print('[setup_verl] verl', __import__('verl').__version__, 'imports')"
echo "$want" > "$stamp"
echo "[setup_verl] done: $TARGET (use PYTHONPATH=$TARGET)"
