#!/bin/bash
# Run some tests against mutants of the last `make mutate` (the mutated copy in mutants/), the way mutmut
# runs them, without mutmut's bookkeeping: to check that a new test kills the survivors it was written for.
#   tools/try_mutant.sh 'MUTANT [MUTANT...]' PYTEST_ARGS...
#   tools/try_mutant.sh 'nnrnn.training.train.x_total_steps__mutmut_5 nnrnn.training.train.x_total_steps__mutmut_7' \
#       tests/training/test_config.py -k number_of_updates
# The tests run first on the unmutated code (they must pass there), then once per mutant.
set -uo pipefail
if [ $# -lt 2 ]; then
    echo "usage: tools/try_mutant.sh 'MUTANT [MUTANT...]' PYTEST_ARGS..." >&2; exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -d "$root/mutants/src/nnrnn" ]; then
    echo "no mutants/ folder here: run make mutate first (it can be stopped once the mutants are generated)" >&2; exit 2
fi
mutants=$1; shift
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
ln -s "$root/mutants/src/nnrnn" "$work/nnrnn"
cp -r "$root/tests" "$work/tests"
run() {  # mutmut's trampolines run the original code unless MUTANT_UNDER_TEST names one of their mutants
    (cd "$work" && MUTANT_UNDER_TEST=$1 NNRNN_SHARED_DATA=${NNRNN_SHARED_DATA:-$root/../shared/data} \
        PYTHONPATH=$work "$root/.venv/bin/python" -m pytest -x -q -p no:cacheprovider -p no:warnings "${@:2}" \
        >"$work/log" 2>&1)
}
if ! run none "$@"; then
    echo "the tests fail on the unmutated code; fix them first:" >&2; tail -n 20 "$work/log" >&2; exit 1
fi
for m in $mutants; do
    if run "$m" "$@"; then echo "survived $m"; else echo "killed   $m"; fi
done
