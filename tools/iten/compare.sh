#!/usr/bin/env bash
# Issue 52: score a candidate Italian→English model against the shipped one on the run's
# Tatoeba dev and FLORES dev (read it→en), beam 4, every text step, and test the difference
# with sacreBLEU's paired bootstrap (1,000 resamples).
#   bash tools/iten/compare.sh CANDIDATE [OUT] [BASELINE]     (from the repository root)
# CANDIDATE: a model directory (e.g. runs/iten/avg8); OUT: where hypotheses and scores go
# (default runs/iten/compare); BASELINE: default the installed it-en model.
set -euo pipefail
cd "$(dirname "$0")/../.."
cand=${1:?usage: compare.sh CANDIDATE [OUT] [BASELINE]}
out=${2:-runs/iten/compare}
base=${3:-src/attenzione/pretrained/it-en}
data=runs/iten/run/data
mkdir -p "$out"
for set in dev dev-flores; do
    cut -f2 "$data/$set.tsv" > "$out/$set.ref"
    for who in base cand; do
        model=$base; [ "$who" = cand ] && model=$cand
        attenzione evaluate --model "$model" --data "$data/$set.tsv" --beam 4 --json \
            --hypotheses "$out/$set.$who.txt" > "$out/$set.$who.json"
    done
    echo "== $set: baseline $base, candidate $cand"
    sacrebleu "$out/$set.ref" -i "$out/$set.base.txt" "$out/$set.cand.txt" \
        --paired-bs -m bleu chrf --force -f text | tee "$out/$set.paired.txt"
done
