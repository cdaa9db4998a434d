#!/usr/bin/env bash
# RL training with verl (GPU nodes): the control model (dapo, grpo, ppo) or the memory-construction policy
# (memory_build, GRPO). Run from anywhere; it works from the repository root.
#
#   one node:    bash pipelines/train/launch.sh dapo|grpo|ppo|memory_build [hydra overrides...]
#   many nodes:  on the head:        bash pipelines/train/launch.sh ray-head
#                on every other node: HEAD=head-host:6379 bash pipelines/train/launch.sh ray-worker
#                then on the head:    NNODES=4 bash pipelines/train/launch.sh dapo [hydra overrides...]
#
# Settings (environment): DATA (folder of m3agent train-data output, default train-data; memory-build-data for
# memory_build), MODEL (HF id or path, default Qwen/Qwen3-8B), NNODES (1), GPUS (GPUs per node, 8), PYTHON
# (python3). Every node needs the repository, the memory DBs and the Parquet files at the same paths (a shared
# file system): control rows name their memory DB by absolute path, and Ray workers import pipelines.train
# from the repository.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$REPO"
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"  # before `ray start`, so every worker can import it
PYTHON=${PYTHON:-python3}
GPUS=${GPUS:-8}
MODE=${1:-}
[ $# -gt 0 ] && shift

case "$MODE" in
  ray-head)
    exec ray start --head --port="${RAY_PORT:-6379}" --num-gpus="$GPUS" --dashboard-host=0.0.0.0 ;;
  ray-worker)
    exec ray start --address="${HEAD:?set HEAD=head-host:6379}" --num-gpus="$GPUS" ;;
  ppo|grpo|dapo) MAKE="m3agent train-data --annotations A --memories DIR" ;;
  memory_build) MAKE="m3agent train-data --task memory-build --tasks FILE"; DATA=${DATA:-memory-build-data} ;;
  *)
    echo "usage: $0 ppo|grpo|dapo|memory_build [hydra overrides...] | ray-head | ray-worker" >&2
    exit 2 ;;
esac

DATA=${DATA:-train-data}
MODEL=${MODEL:-Qwen/Qwen3-8B}
NNODES=${NNODES:-1}
if [ ! -f "$DATA/train.parquet" ]; then
  echo "no $DATA/train.parquet: run $MAKE --out $DATA first" >&2
  exit 2
fi
VAL="$DATA/val.parquet"
if [ ! -f "$VAL" ]; then
  echo "[launch] no $VAL (nothing held out): validating on the training set" >&2
  VAL="$DATA/train.parquet"
fi
if [ "$NNODES" -gt 1 ]; then
  export RAY_ADDRESS=${RAY_ADDRESS:-auto}  # join the cluster `ray start` made instead of starting one
fi

exec "$PYTHON" -m verl.trainer.main_ppo \
  --config-path="$REPO/pipelines/train/config" --config-name="$MODE" \
  data.train_files="$DATA/train.parquet" data.val_files="$VAL" \
  actor_rollout_ref.model.path="$MODEL" \
  trainer.nnodes="$NNODES" trainer.n_gpus_per_node="$GPUS" \
  "$@"
