#!/bin/bash
# Datagen's cost with and without the pass-by-pass size stage, on the four-language run's own documents and vocabulary
# (RUN: the --output-dir of `run --preset sample-multi --config 2026-11-28-en-zh-ja-ko.yaml`), one worker, the run's
# settings. OLD: a copy of the code before it (`git archive 6fef3c6 | tar -x -C OLD`), run with this checkout's .venv.
# The YAML's data folders are made absolute (SHARED, default ../shared/data beside the repository) so that both run from their own folder. CPU s of the process
# tree by /usr/bin/time (user + system); two repetitions interleaved.
set -e
REPO=$(pwd); T=${T:-/tmp/cost-times.txt}; : > $T
DOCS=$(ls -d $RUN/pipeline_root/CorpusGen/documents/*/ | head -1); VOCAB=$(ls $RUN/pipeline_root/VocabGen/vocab/*/spm.model | head -1)
sed "s#\.\./shared/data#${SHARED:-$(cd ../shared/data && pwd)}#g" benchmarks/results/languages/2026-11-28-en-zh-ja-ko.yaml > /tmp/cost.yaml
A="make-pretraining-data --preset sample-multi --config /tmp/cost.yaml --input $DOCS --vocab $VOCAB"
for i in 1 2; do
  rm -rf /tmp/cost-new; /usr/bin/time -f "new-$i cpu %U %S wall %e" $REPO/.venv/bin/albert-pipeline $A --output /tmp/cost-new > /tmp/cost-new.json 2>>$T
  rm -rf /tmp/cost-old; (cd $OLD && PYTHONDONTWRITEBYTECODE=1 /usr/bin/time -f "old-$i cpu %U %S wall %e" $REPO/.venv/bin/python -m pipeline.cli $A --output /tmp/cost-old > /tmp/cost-old.json 2>>$T)
done
grep -E "^(new|old)-" $T
