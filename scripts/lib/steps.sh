# Step runner shared by the device-machine scripts (gpu-check.sh, oracle-check.sh): each step's
# output goes to the terminal and to $out/NAME.log; a failing step does not stop the others.
# Source it after setting `out`.

declare -a step_names=() step_codes=() step_secs=()

run_step() {  # run_step NAME COMMAND...: tee output into $out/NAME.log, record the exit status
  local name=$1
  shift
  echo
  local cmd="$*"
  echo "=================== $name: ${cmd:0:160}"
  local start=$SECONDS
  "$@" 2>&1 | tee "$out/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "=================== $name: exit $rc in $((SECONDS - start)) s"
  step_names+=("$name")
  step_codes+=("$rc")
  step_secs+=("$((SECONDS - start))")
}

# Prints one line per step; sets `failed` to 1 if any step failed, else 0.
print_step_summary() {
  failed=0
  local i status
  for i in "${!step_names[@]}"; do
    status=ok
    if [ "${step_codes[$i]}" != 0 ]; then status="FAILED (exit ${step_codes[$i]})"; failed=1; fi
    printf '  %-12s %5s s  %s\n' "${step_names[$i]}" "${step_secs[$i]}" "$status"
  done
}
