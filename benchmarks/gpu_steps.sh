# Sourced by the GPU scripts of benchmarks/: step NAME LIMIT COMMAND... runs the command under a time limit,
# its output in $OUT/NAME.log, and adds "NAME: rc=... in ... s (limit ... s)" to $OUT/summary.txt.
step() {  # name, limit in seconds, command...
  local name=$1 limit=$2
  shift 2
  local started=$SECONDS
  timeout --kill-after=10 "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name: rc=$rc in $((SECONDS - started)) s (limit $limit s)" | tee -a "$OUT/summary.txt"
  return $rc
}
