#!/usr/bin/env bash
# Continue the shipped en-it model on a lent GPU (tools/device/README.md).
# usage: bash tools/device/continue.sh DEVICE MINUTES MAX_TOKENS LR [MAX_STEPS]
set -uo pipefail
DEV=${1:-cuda}; MIN=${2:-6}; TOK=${3:-16000}; LR=${4:-2e-4}; STEPS=${5:-}
OUT=${OUT:-/tmp/gpuout}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 4
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
R=/tmp/gpu-r; rm -rf "$R"; mkdir -p "$R/data"
nvidia-smi -L 2>/dev/null; python3 -c "import torch; print(torch.__version__, torch.cuda.is_available())"
python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('gpu/train.tsv.xz'), open('$R/data/train.tsv','wb'))"
cp gpu/dev.tsv gpu/test.tsv gpu/dev-flores.tsv gpu/cleaning.json "$R/data/"
cp -r gpu/src_tokenizer gpu/tgt_tokenizer "$R/"
timeout 180 python3 tools/device/smoke.py "$DEV" 2>&1 | tee "$OUT/smoke.log"
[ "${PIPESTATUS[0]}" = 0 ] || { echo "SMOKE FAILED"; exit 3; }
D=../shared/data; X=$D/extra; P=$D/prose; M=src/attenzione/pretrained/en-it
python3 -m attenzione train --out "$R" --preset small --enc-layers 6 --d-ff 2048 \
    --init-from $M --tokenizers-from $M \
    --data $D/en-it.train.tsv:0.6 --data $X/debian-package-descriptions.en-it.tsv.gz:0.9 \
    --data $X/debian-manuals.en-it.tsv.gz:0.6 --data $X/kde-manuals.en-it.tsv.gz:0.3 \
    --data $X/gimp-help.en-it.tsv.gz:0.3 --data $X/libreoffice-help.en-it.tsv.gz:0.3 \
    --data $X/gnome-help.en-it.tsv.gz:0.3 --data $X/games-0ad-freecol.en-it.tsv.gz:0.6 \
    --data $P/europarl-lowercased.en-it.tsv.gz:1:lc \
    --data $P/mt-geneval-wikipedia.en-it.tsv.gz:3 --data $P/udhr.en-it.tsv.gz:3 \
    --data $P/debian-website.en-it.tsv.gz --data $P/debian-history.en-it.tsv.gz:2 \
    --data $P/wesnoth.en-it.tsv.gz --data $P/lilypond-doc.en-it.tsv.gz --data $P/manpages-it.en-it.tsv.gz \
    --data $P/debian-install-guide.en-it.tsv.gz --data $P/debian-developers-reference.en-it.tsv.gz \
    --data $P/kicad-doc.en-it.tsv.gz --data $P/debian-edu-manual.en-it.tsv.gz --data $P/debian-faq.en-it.tsv.gz \
    --data $P/gnucash-docs.en-it.tsv.gz --data $P/debian-maint-guide.en-it.tsv.gz --data $P/tuxpaint-stamps.en-it.tsv.gz \
    --extra-dev flores=$D/dev/flores101-dev.eng-ita.tsv \
    --number-augment 0.3 --max-tokens "$TOK" --bf16 --threads 8 --device "$DEV" --no-progress \
    --eval-every "${EVAL:-1000}" --save-every-minutes 30 --keep-snapshots 8 --lr "$LR" --warmup-steps 400 \
    --max-minutes "$MIN" ${STEPS:+--max-steps $STEPS} 2>&1 | tee "$OUT/train.log"
[ "${PIPESTATUS[0]}" = 0 ] || { echo "TRAINING FAILED"; cp "$R/metrics.jsonl" "$OUT/" 2>/dev/null; exit 5; }
cp "$R/init.json" "$OUT/"
ls "$R" "$R/snapshots"
bash tools/device/pack.sh "$R" 2>&1 | tee -a "$OUT/train.log"
