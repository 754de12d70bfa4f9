#!/bin/bash
# usage: evals/timings.sh TREE (a checkout of localmem); needs /tmp/bench10k/bench-10000.db from `localmem bench search --sizes 10000 --workdir /tmp/bench10k` ; prints best-of-5 wall times for import, --help, cold search on the 10K bench store
venv="$(dirname "$0")/../.venv/bin/activate"
[ -f "$venv" ] && . "$venv"   # else the python on PATH
export PYTHONPATH=$1
cd /tmp
best() { local b=999; for i in 1 2 3 4 5; do s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N); t=$(echo "$e - $s" | bc); b=$(echo "if ($t < $b) $t else $b" | bc); done; echo $b; }
echo "import localmem: $(best python -c 'import localmem')"
echo "localmem --help: $(best python -m localmem --help)"
echo "cold search 10K: $(best python -m localmem --db /tmp/bench10k/bench-10000.db search 'where did she travel last summer')"
