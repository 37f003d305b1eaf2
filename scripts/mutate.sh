#!/usr/bin/env bash
# The standing mutation suite (docs/VALIDATION.md): plants each bug of scripts/mutations.txt,
# one at a time, in a copy of the tree, rebuilds what the change touches, runs the cpu tests CI
# runs, and reports which tests caught it. A bug no test catches is a missing test.
#
#   scripts/mutate.sh [--only NAME[,NAME...]] [--tests REGEX] [--list FILE]
#
# Run on demand, not in CI: each mutation costs a rebuild of its dependents plus the cpu suite
# (a few minutes on two cores). The main build stays untouched: the copy and its build live in
# $JLLM_MUTATE_DIR (default build-mutate/, which .gitignore covers); CUDA is off there (a CUDA
# kernel mutation is caught by the CPU emulation's cpu tests, which need no toolkit). Results:
# a markdown table on stdout and in $JLLM_MUTATE_DIR/results.md, each mutation's test log in
# $JLLM_MUTATE_DIR/logs/.
# Exit status 1 if any mutation survived (or did not apply or build).
#
# A list line is `name | file | from ==> to`: `from` must occur exactly once in `file` (a
# literal string; \n stands for a newline) and is replaced by `to`. Lines starting with # are
# comments.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
list=$root/scripts/mutations.txt
only=""
tests=""
while (($#)); do
  case "$1" in
    --only) only=$2; shift 2 ;;
    --tests) tests=$2; shift 2 ;;
    --list) list=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "mutate: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
work=${JLLM_MUTATE_DIR:-$root/build-mutate}
src=$work/src
build=$work/build
logs=$work/logs
jobs=$(nproc)
mkdir -p "$src" "$logs"

# The copy: tracked and untracked-but-not-ignored files, as the working tree has them now. A
# file is written only where its content differs from the copy's (so it gets a new modification
# time and its dependents rebuild); an unchanged one keeps its time and nothing rebuilds for it.
# Files gone from the tree go from the copy too.
echo "mutate: syncing the tree into $src" >&2
(cd "$root" && git ls-files -co --exclude-standard -z) | python3 -c '
import os, shutil, sys
root, src = sys.argv[1], sys.argv[2]
names = {n for n in sys.stdin.read().split("\0") if n and os.path.isfile(os.path.join(root, n))}
for n in names:
    a, b = os.path.join(root, n), os.path.join(src, n)
    if not os.path.isfile(b) or open(a, "rb").read() != open(b, "rb").read():
        os.makedirs(os.path.dirname(b), exist_ok=True)
        shutil.copyfile(a, b)
        shutil.copymode(a, b)
for d, _, files in os.walk(src):
    rel = os.path.relpath(d, src)
    if rel == ".deps" or rel.startswith(".deps" + os.sep):
        continue
    for f in files:
        n = os.path.normpath(os.path.join(rel, f))
        if n not in names:
            os.remove(os.path.join(d, f))
' "$root" "$src"
# Test data the copy needs but git ignores (the npm oracles, the fetched tokenizer), and the
# shared models beside the real checkout.
ln -sfn "$root/.deps" "$src/.deps"
export JLLM_SHARED_DIR=${JLLM_SHARED_DIR:-$root/../shared}
export JLLM_REQUIRE_ORACLES=1  # a skipped test catches nothing: make missing data loud

echo "mutate: configuring and building $build (the first run builds everything)" >&2
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DJLLM_WITH_CUDA=OFF >/dev/null
cmake --build "$build" -j"$jobs" >"$logs/baseline-build.log" 2>&1 ||
  { echo "mutate: the unmutated copy does not build; see $logs/baseline-build.log" >&2; exit 2; }

ctest_args=(--test-dir "$build" -L cpu -j"$jobs" --timeout 600 --output-on-failure)
[ -n "$tests" ] && ctest_args+=(-R "$tests")

# Failed test names from a ctest run's output, one per line.
failed_tests() {
  sed -n 's/^[[:space:]]*[0-9]\+ - \(.*\) (\(Failed\|Timeout\|SEGFAULT\|Subprocess aborted\|Exception\|Child aborted\|Not Run\)).*$/\1/p' "$1" |
    sed 's/[[:space:]]\+#.*//'
}

# Failed test names grouped by test: instances of a parameterized test count as one entry,
# "Suite.Test (×n)".
by_test() {
  sed 's#^[^./]*/##; s#/.*##' | sort | uniq -c |
    awk '{ printf "%s%s%s", (NR > 1 ? ", " : ""), $2, ($1 > 1 ? " (×" $1 ")" : "") }'
}

echo "mutate: baseline test run" >&2
ctest "${ctest_args[@]}" >"$logs/baseline.log" 2>&1 || true
baseline_failed=$(failed_tests "$logs/baseline.log")
if [ -n "$baseline_failed" ]; then
  echo "mutate: these tests fail without any mutation and are not counted:" >&2
  echo "$baseline_failed" | sed 's/^/  /' >&2
fi

# Applies one mutation to the copy: `from` must occur exactly once in `file`. The copy's file is
# kept first, so restoring takes what the run copied, not what the tree holds by then.
apply() {  # file from to
  cp "$src/$1" "$work/original"
  python3 - "$src/$1" "$2" "$3" <<'EOF'
import sys
path, old, new = sys.argv[1], sys.argv[2].replace("\\n", "\n"), sys.argv[3].replace("\\n", "\n")
text = open(path).read()
n = text.count(old)
if n != 1:
    sys.exit(f"{n} occurrences of the pattern")
open(path, "w").write(text.replace(old, new))
EOF
}
# A plain copy: its new modification time makes the next build redo what the mutation built.
restore() { cp "$work/original" "$src/$1"; }

results=$work/results.md
{
  echo "| mutation | file | result | caught by |"
  echo "|---|---|---|---|"
} >"$results"
survived=0
while IFS= read -r line <&3 || [ -n "$line" ]; do
  case "$line" in ''|'#'*) continue ;; esac
  name=$(echo "${line%% | *}" | xargs)
  rest=${line#* | }
  file=$(echo "${rest%% | *}" | xargs)
  change=${rest#* | }
  from=${change%% ==> *}
  to=${change#* ==> }
  if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then continue; fi
  echo "mutate: $name ($file)" >&2
  log=$logs/$name.log
  if ! why=$(apply "$file" "$from" "$to" 2>&1); then
    echo "| $name | $file | DOES NOT APPLY ($why) | |" >>"$results"
    survived=1
    continue
  fi
  if ! cmake --build "$build" -j"$jobs" >"$log" 2>&1; then
    restore "$file"
    echo "| $name | $file | DOES NOT BUILD (see logs/$name.log) | |" >>"$results"
    survived=1
    continue
  fi
  ctest "${ctest_args[@]}" >>"$log" 2>&1 || true
  restore "$file"
  caught=$(comm -23 <(failed_tests "$log" | sort -u) <(echo "$baseline_failed" | sort -u) | grep -v '^$' || true)
  if [ -z "$caught" ]; then
    echo "| $name | $file | **SURVIVED** | — |" >>"$results"
    survived=1
  else
    echo "| $name | $file | caught | $(echo "$caught" | by_test) |" >>"$results"
  fi
done 3<"$list"

# Leave the copy's build matching the tree again.
cmake --build "$build" -j"$jobs" >"$logs/restore-build.log" 2>&1 || true
cat "$results"
exit $survived
