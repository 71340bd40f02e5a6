#!/bin/bash
# OUT: the folder of `python -m benchmarks.language_sampling_inputs OUT` (OUT/docs, OUT/vocab); OUT/en holds a copy of
# OUT/docs/documents-en-00000-of-00001.txt named documents-00000-of-00001.txt (English alone, a single-language run),
# OUT/zh the same of the Chinese file. main: a checkout of main (MAIN), its own .venv, read-only (PYTHONDONTWRITEBYTECODE=1).
# Final language-sampling measurements (run from the branch's checkout); CPU seconds of the process tree by /usr/bin/time.
T=OUT/final-times.txt; : > $T
C="--set datagen.max_seq_length=128 --set datagen.max_predictions_per_seq=20"
M="--input OUT/docs --vocab OUT/vocab/spm.model --set language=[en,zh,ja,ko]"
run() { name=$1; shift; rm -rf OUT/f-$name; /usr/bin/time -f "$name cpu %U %S wall %e" .venv/bin/albert-pipeline make-pretraining-data "$@" --output OUT/f-$name >/dev/null 2>>$T; }
run a07 $M $C --set datagen.dupe_factor=4
run a03 $M $C --set datagen.language_alpha=0.3 --set datagen.dupe_factor=4
run unimax $M $C --set datagen.language_sampling=unimax --set datagen.language_max_epochs=2 --set datagen.dupe_factor=4
for i in 1 2; do
  run multi-$i $M $C --set datagen.dupe_factor=4
  run en-$i --input OUT/en --vocab data/sample/vocab/30k-clean.model $C --set datagen.dupe_factor=4
  rm -rf OUT/f-main-$i; (cd "$MAIN" && PYTHONDONTWRITEBYTECODE=1 /usr/bin/time -f "main-$i cpu %U %S wall %e" .venv/bin/albert-pipeline make-pretraining-data --input OUT/en --vocab data/sample/vocab/30k-clean.model $C --set datagen.dupe_factor=4 --output OUT/f-main-$i >/dev/null 2>>$T)
done
Z="--input OUT/zh --vocab OUT/vocab/spm.model --set language=zh --set datagen.sop_mode=pure"
for i in 1 2; do
  run zh-none-$i $Z $C --set datagen.dupe_factor=10
  run zh-rjieba-$i $Z $C --set datagen.dupe_factor=10 "--set" "datagen.segmenters={zh: rjieba}"
  run zh-jieba-$i $Z $C --set datagen.dupe_factor=10 "--set" "datagen.segmenters={zh: jieba}"
done
echo done >> $T
