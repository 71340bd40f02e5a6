#!/bin/bash
# The quiet rerun of 2026-11-28-languages.md's cost table (see 2026-11-28-languages-quiet.md): OUT from
# `python -m benchmarks.language_sampling_inputs OUT`, OUT/en and OUT/zh single-language copies as in 2026-11-28-languages.sh.
OUT=${OUT:?the inputs folder}; T=$OUT/final-times.txt; : > $T
C="--set datagen.max_seq_length=128 --set datagen.max_predictions_per_seq=20"
M="--input $OUT/docs --vocab $OUT/vocab/spm.model --set language=[en,zh,ja,ko]"
run() { name=$1; shift; rm -rf $OUT/f-$name; /usr/bin/time -f "$name cpu %U %S wall %e" .venv/bin/albert-pipeline make-pretraining-data "$@" --output $OUT/f-$name >/dev/null 2>>$T; }
for i in 1 2; do
  run multi-$i $M $C --set datagen.dupe_factor=4
  run en-$i --input $OUT/en --vocab data/sample/vocab/30k-clean.model $C --set datagen.dupe_factor=4
done
Z="--input $OUT/zh --vocab $OUT/vocab/spm.model --set language=zh --set datagen.sop_mode=pure"
for i in 1 2; do
  run zh-none-$i $Z $C --set datagen.dupe_factor=10
  run zh-rjieba-$i $Z $C --set datagen.dupe_factor=10 "--set" "datagen.segmenters={zh: rjieba}"
done
echo done >> $T
