#!/usr/bin/env bash
# make demo [DATA=dir]: benchmark stoker's train pipeline on an image folder
# and, where /usr/bin/python3 has torch, the same pipeline through
# torch.utils.data.DataLoader, printing both and the ratio. Without DATA a
# deterministic synthetic folder of photo-like 500x375 JPEGs is generated
# once under build/demo-data.
set -euo pipefail
cd "$(dirname "$0")/.."
data="${1:-}"
if [[ -z "$data" ]]; then
  data=build/demo-data
  if [[ ! -f "$data/.complete" ]]; then
    build/stoker synth "$data" --classes 4 --per-class 128
    touch "$data/.complete"
  fi
fi
compare=()
if /usr/bin/python3 -c "import torch, torchvision" >/dev/null 2>&1; then
  compare=(--compare torch)
else
  echo "demo: /usr/bin/python3 has no torch; running stoker alone" >&2
fi
build/stoker bench "$data" --pipeline train --epochs 3 "${compare[@]}"
