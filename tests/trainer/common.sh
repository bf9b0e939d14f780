# Shared set-up for the trainer's end-to-end tests: a tiny dataset and config in $tmp, and a
# runner for 1 or 2 ranks (2 ranks rendezvous through a FileStore, Gloo on CPU).
# shellcheck shell=bash
source "$(dirname "${BASH_SOURCE[0]}")/../cli/lib.sh"
bt=$1

# make_dataset DIR EPISODES MIN:MAX
make_dataset() {
  "$bt" synth-data --out "$1" --episodes "$2" --seed 7 --frames "$3" --height 4 --width 4 \
    --channels 2 --action-dim 4 --action-steps 2 --text-len 2 --text-dim 8 >/dev/null
}

# write_config FILE RUN_DIR [extra yaml lines...]
write_config() {
  local file=$1 dir=$2; shift 2
  {
    echo "run: {name: t, dir: $dir, steps: ${STEPS:-9}, seed: 11}"
    echo "data: {path: $tmp/ds, batch_size: 4, pad_multiple: 4, pool_factor: 2}"
    echo "model: {dim: 24, heads: 2, layers: 1, ffn_dim: 48, freq_dim: 16}"
    echo "optim: {lr: 2.0e-3, warmup_steps: 3, grad_accum: ${ACCUM:-2}, shard: ${SHARD:-none}${MASTER:+, master: $MASTER}}"
    echo "checkpoint: {every: ${EVERY:-100}, keep_last: 3${EXPORT:+, export_dtype: $EXPORT}}"
    echo "train: {dtype: ${DTYPE:-float32}, log_every: 100${ACT:+, activation_checkpointing: $ACT}}"
    for line in "$@"; do echo "$line"; done
  } >"$file"
}

# train_ranks WORLD ARGS...: runs `baton-train train ARGS` on WORLD ranks; returns rank 0's exit
# code after checking that every rank exited the same way.
train_ranks() {
  local world=$1; shift
  if [ "$world" -eq 1 ]; then
    local rc=0
    "$bt" train "$@" >>"$tmp/train.log" 2>&1 || rc=$?
    return $rc
  fi
  local store="$tmp/rdzv.$RANDOM.$RANDOM" pids=() rcs=() r
  rm -f "$store"
  for ((r = 0; r < world; r++)); do
    RANK=$r WORLD_SIZE=$world BATON_RDZV_FILE=$store "$bt" train "$@" >>"$tmp/train.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do
    local rc=0
    wait "$p" || rc=$?
    rcs+=("$rc")
  done
  for rc in "${rcs[@]}"; do [ "$rc" -eq "${rcs[0]}" ] || fail "ranks exited differently: ${rcs[*]}"; done
  return "${rcs[0]}"
}

# same_checkpoint A B: the same tensor files (weights, export, AdamW state, one per rank or
# one in all), bit for bit.
same_checkpoint() {
  local fa fb
  fa=$(cd "$1" && find . -name '*.safetensors' | sort)
  fb=$(cd "$2" && find . -name '*.safetensors' | sort)
  [ -n "$fa" ] && [ "$fa" = "$fb" ] || fail "tensor files differ between $1 and $2: $fa vs $fb"
  for f in $fa; do
    "$bt" tensor-diff "$1/$f" "$2/$f" >/dev/null || fail "$f differs between $1 and $2"
  done
  checks=$((checks + 1))
  echo "ok: $(basename "$1") weights and AdamW state bit-identical"
}

# effective_steps RUN_DIR: "step lr loss grad_norm" per step, the last attempt's row winning
# (tests/lib/effective_steps.py, shared with the integration tests).
effective_steps() { python3 "$(dirname "${BASH_SOURCE[0]}")/../lib/effective_steps.py" "$1"; }
