#!/usr/bin/env bash
# Issue 52: continue the shipped Italian→English model, data weighted toward English prose.
# Start:  bash tools/iten/continue.sh MINUTES [THREADS]   (from the repository root)
# Resume: attenzione train --out runs/iten/run --resume --max-minutes N --threads T
set -euo pipefail
cd "$(dirname "$0")/../.."
D=../shared/data; X=$D/extra; P=$D/prose; M=src/attenzione/pretrained/it-en
[ -d runs/iten/base ] || cp -r "$M" runs/iten/base
attenzione train --out runs/iten/run --reverse --src-lang it --tgt-lang en \
    --preset small --enc-layers 6 --d-ff 2048 \
    --init-from runs/iten/base --tokenizers-from runs/iten/base \
    --data $D/en-it.train.tsv:0.6 --data $X/debian-package-descriptions.en-it.tsv.gz:0.6 \
    --data $X/debian-manuals.en-it.tsv.gz:0.6 --data $X/kde-manuals.en-it.tsv.gz:0.15 \
    --data $X/gimp-help.en-it.tsv.gz:0.15 --data $X/libreoffice-help.en-it.tsv.gz:0.15 \
    --data $X/gnome-help.en-it.tsv.gz:0.15 --data $X/games-0ad-freecol.en-it.tsv.gz:0.4 \
    --data $P/europarl-lowercased.en-it.tsv.gz:1.5:lc \
    --data $P/mt-geneval-wikipedia.en-it.tsv.gz:4 --data $P/udhr.en-it.tsv.gz:3 \
    --data $P/debian-website.en-it.tsv.gz:2 --data $P/debian-history.en-it.tsv.gz:3 \
    --data $P/wesnoth.en-it.tsv.gz --data $P/lilypond-doc.en-it.tsv.gz --data $P/manpages-it.en-it.tsv.gz \
    --data $P/debian-install-guide.en-it.tsv.gz --data $P/debian-developers-reference.en-it.tsv.gz \
    --data $P/kicad-doc.en-it.tsv.gz --data $P/debian-edu-manual.en-it.tsv.gz --data $P/debian-faq.en-it.tsv.gz \
    --data $P/gnucash-docs.en-it.tsv.gz --data $P/debian-maint-guide.en-it.tsv.gz --data $P/tuxpaint-stamps.en-it.tsv.gz \
    --extra-dev flores=$D/dev/flores101-dev.eng-ita.tsv \
    --number-augment 0.3 --max-tokens 4000 --bf16 --threads "${2:-2}" \
    --eval-every 500 --save-every-minutes 5 --keep-snapshots 8 --lr 2e-4 --warmup-steps 300 \
    --max-minutes "${1:-60}"
