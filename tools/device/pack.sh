#!/usr/bin/env bash
# Bring a device run's model back: the mean of its last LAST (default 4) snapshots, rounded to
# fp16, as $OUT/avg.tar.part-* (15 MiB parts: the device returns files of at most 16 MiB).
# usage: bash tools/device/pack.sh RUN_DIR      (PYTHONPATH must reach src/, as in continue.sh)
set -euo pipefail
R=$1; OUT=${OUT:-/tmp/gpuout}; mkdir -p "$OUT"
cp "$R/metrics.jsonl" "$OUT/"
rm -rf /tmp/gpu-avg
python3 -m attenzione average "$R" --out /tmp/gpu-avg --last "${LAST:-4}"
python3 - <<'PY'
from safetensors.torch import load_file, save_file
p = "/tmp/gpu-avg/model.safetensors"
save_file({k: v.half().contiguous() for k, v in load_file(p).items()}, p)
PY
tar cf - -C /tmp gpu-avg | split -b 15m - "$OUT/avg.tar.part-"
ls -la "$OUT"
