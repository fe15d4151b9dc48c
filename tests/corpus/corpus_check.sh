#!/usr/bin/env bash
# make corpus-check: `gpu-sizer check` over every file of a corpus of real
# GPU manifests (by default ../shared/corpus/manifests beside the checkout;
# it is not part of the repository), one line per file and a tally by
# result. Fails only when a file crashes the checker (an exit code other
# than 0 admitted, 1 changed or denied, 2 an error it names), so the
# target shows what a change does to real files without pinning them.
#
# usage: corpus_check.sh GPU_SIZER_BINARY CORPUS_DIR [check flags...]
set -euo pipefail

binary=$1
corpus=$2
shift 2

if [[ ! -d "$corpus" ]]; then
  echo "corpus-check: no corpus at $corpus (set CORPUS=DIR)" >&2
  exit 2
fi

declare -A tally=([0]=0 [1]=0 [2]=0)
crashed=0
output=$(mktemp)
trap 'rm -f "$output"' EXIT

while IFS= read -r -d '' file; do
  status=0
  "$binary" check "$@" "$file" >"$output" 2>&1 || status=$?
  case $status in
    0) result=admitted ;;
    1) result=changed-or-denied ;;
    2) result=$(grep -m1 -v '^$' "$output" || echo error) ;;
    *) result="CRASHED (exit $status)"; crashed=$((crashed + 1)) ;;
  esac
  tally[$status]=$(( ${tally[$status]:-0} + 1 ))
  printf '%s  %s\n' "${file#"$corpus"/}" "$result"
done < <(find "$corpus" -type f \( -name '*.yaml' -o -name '*.yml' -o -name '*.json' \) -print0 | sort -z)

echo "corpus-check: ${tally[0]} admitted unchanged, ${tally[1]} changed or denied, ${tally[2]} errors, $crashed crashed"
[[ $crashed -eq 0 ]]
