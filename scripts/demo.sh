#!/usr/bin/env bash
# make demo [DATA=dir]: benchmark stoker's train pipeline on an image folder
# and, where a Python with torch is found (below), the same pipeline through
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
# The DataLoader side runs with torch 2.x from pip where `make test` made its venv
# (.venvs/torch2), else with Debian's /usr/bin/python3 and its torch 1.13; $STOKER_PYTHON
# picks another interpreter.
compare=()
py=${STOKER_PYTHON:-}
if [[ -z "$py" ]]; then
  py=/usr/bin/python3
  [[ -x .venvs/torch2/bin/python ]] && py=.venvs/torch2/bin/python
fi
if tv=$("$py" -c "import torch, torchvision; print(torch.__version__, torchvision.__version__)" \
        2>/dev/null); then
  echo "demo: the DataLoader runs with $py (torch, torchvision: $tv)" >&2
  export STOKER_PYTHON=$py
  compare=(--compare torch)
else
  echo "demo: $py has no torch; running stoker alone" >&2
fi
build/stoker bench "$data" --pipeline train --epochs 3 "${compare[@]}"
