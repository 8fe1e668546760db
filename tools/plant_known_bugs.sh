#!/bin/bash
# Plant, one at a time, the six training-procedure bugs that issue 15 found the suite blind to, run the
# test named for each, restore the file, and print whether the test caught it.  Run from the repository
# root with the project's virtual environment (make install); takes about a minute.
set -u
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
backup=$(mktemp)
out=$(mktemp)
trap 'rm -f "$backup" "$out"' EXIT
missed=0
plant() {  # description, file, sed expression, test
  cp "$2" "$backup"
  sed -i "$3" "$2"
  if cmp -s "$2" "$backup"; then
    echo "$1: NOT PLANTED (the code changed; update this script)"; missed=$((missed + 1)); return
  fi
  if "$PY" -m pytest -q -x -p no:warnings -p no:cacheprovider "$4" > "$out" 2>&1; then
    echo "$1: MISSED by $4"; missed=$((missed + 1))
  else
    echo "$1: caught by $4"
  fi
  cp "$backup" "$2"
}
T=tests/training/test_train.py
plant "the nnRNN penalty is not added to the loss" src/nnrnn/training/step.py \
  's/(loss + penalty).backward()/loss.backward()/' "$T::test_the_penalty_acts_on_gamma_and_t_in_the_training_loop"
plant "lr_orth is ignored" src/nnrnn/training/train.py \
  's/param_groups(net, config\["lr"\], config\["lr_orth"\])/param_groups(net, config["lr"], config["lr"])/' \
  "$T::test_the_orthogonal_generator_trains_at_lr_orth"
plant "the carried PTB state is not restored on resume" src/nnrnn/training/run_state.py \
  's/RunState.from_checkpoint(saved, distributed.shard_state(saved\["state"\], run.rank, run.world))/RunState.from_checkpoint(saved, None)/' \
  "$T::test_resume_restores_the_carried_ptb_state_and_the_schedule"
plant "checkpoints are written in place" src/nnrnn/training/checkpoint.py \
  's/fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)/tmp = str(path); fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)/' \
  "tests/training/test_checkpoint.py::test_a_failed_checkpoint_write_leaves_the_previous_one_readable"
plant "the copy baseline is changed" src/nnrnn/tasks/copy.py \
  's|return COPY_LENGTH \* math.log(N_SYMBOLS) / (T + 2 \* COPY_LENGTH)|return COPY_LENGTH * math.log(N_SYMBOLS) / (T + COPY_LENGTH)|' \
  "tests/test_tasks.py::test_copy_baseline_is_the_cross_entropy_of_blanks_then_a_uniform_guess"
plant "the copy cue comes one step later" src/nnrnn/tasks/copy.py \
  's/x\[:, COPY_LENGTH + T - 1\] = CUE/x[:, COPY_LENGTH + T] = CUE/' "tests/test_tasks.py::test_copy_layout_by_hand"
git diff --quiet -- src/nnrnn || { echo "src/nnrnn/ differs from git after restoring: check it"; exit 1; }
exit $missed
